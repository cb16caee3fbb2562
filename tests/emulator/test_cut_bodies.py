"""A request body cut or malformed on the wire (chunked or sized) is the client's bad input:
400 `invalid_argument`, nothing of it kept, no traceback in the log. And file names carry
no control character of any kind (docs/emulator.md, "File names")."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

from tests.support.emulator_http import AWS, Box, Http, sha

BODY = b"x" * 5000


def raw_request(url: str, method: str, headers: dict[str, str], body: bytes,
                hang_up: bool) -> tuple[int, dict | None]:
    """Send `body` as it is (a chunked one malformed or cut as the test wrote it); with
    `hang_up`, the client then stops sending but still reads the answer."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    head = f"{method} {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(head.encode() + body)
        if hang_up:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    status_line, _, rest = raw.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    try:
        return int(status_line.split()[1]), json.loads(payload)
    except ValueError:
        return int(status_line.split()[1]), None


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


CUT_PUTS = {
    # no CRLF after a chunk's data (gunicorn: ChunkMissingTerminator)
    "chunk-missing-terminator": (True, chunk(BODY[:100])[:-2] + b"XX" + b"0\r\n\r\n", False),
    "chunk-size-not-hex": (True, b"zz\r\n" + BODY[:10] + b"\r\n0\r\n\r\n", False),
    "chunked-cut-mid-chunk": (True, b"2000\r\n" + BODY[:100], True),
    "chunked-without-last-chunk": (True, chunk(BODY[:100]), True),
    "sized-cut": (False, BODY[:100], True),
}


@pytest.fixture
def served(live_factory):
    return live_factory()


@pytest.mark.parametrize("case", sorted(CUT_PUTS))
def test_a_cut_or_malformed_put_body_is_invalid_and_kept_nowhere(served, artifact, case):
    chunked, body, hang_up = CUT_PUTS[case]
    box = Box(served.http, artifact, AWS)
    assert box.open().status == 200
    w = box.http.request("POST", "/api/v1/versions/write", json={
        "artifact": artifact, "token": box.token, "version": "step-00000001",
        "files": [{"name": "m.bin"} if chunked else
                  {"name": "m.bin", "size": len(BODY), "sha256": sha(BODY)}]})
    assert w.status == 200, w.body
    url = w.body["files"][0]["url"]
    headers = {"Transfer-Encoding": "chunked"} if chunked else {
        "Content-Length": str(len(BODY))}
    status, reply = raw_request(url, "PUT", headers, body, hang_up)
    assert (status, reply["error"]["code"]) == (400, "invalid_argument"), reply
    commit = box.commit(w.body["upload"])
    assert (commit.status, commit.code) == (409, "incomplete")  # nothing of it was received
    assert "Traceback" not in served.log()
    # The upload is unharmed: the whole body still goes in.
    again = box.http.request("PUT", url, key=None, data=BODY)
    assert again.status == 200, again.body


def test_a_malformed_chunked_json_body_is_invalid_and_changes_nothing(served, artifact):
    payload = json.dumps({"artifact": artifact, "resume": None}).encode()
    status, reply = raw_request(
        served.api_url + "/artifacts/open", "POST",
        {"Transfer-Encoding": "chunked", "Content-Type": "application/json",
         "Authorization": f"Bearer {served.key}"},
        chunk(payload)[:-2] + b"XX0\r\n\r\n", False)
    assert (status, reply["error"]["code"]) == (400, "invalid_argument"), reply
    info = served.http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact})
    assert (info.status, info.code) == (404, "not_found")
    assert "Traceback" not in served.log()


@pytest.mark.parametrize("name", ["a\x85b.bin", "a\u202egpj.exe", "dir/\u2066x", "a\u200fb",
                                  "a\u2028b", "a\x9bb", "a\x7fb"])
def test_file_names_with_any_control_character_are_invalid(http: Http, artifact, name):
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    w = box.write("step-00000001", {name: b"x"})
    assert (w.status, w.code) == (400, "invalid_argument")
    assert box.read().status == 404
