"""The served data plane's fast paths: sendfile for GET, socket reads for PUT.

Under gunicorn a GET of a folder-stored file is sent with sendfile() and a PUT body is read
straight from the socket; these tests pin what must not change with that: exact ranges,
metering of the bytes actually sent, and keep-alive connections that stay in step.
"""

from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlsplit

from tests.support.emulator_http import AWS, Box, sha


def _target(url: str) -> str:
    u = urlsplit(url)
    return u.path + "?" + u.query


def _raw(url: str) -> tuple[socket.socket, str]:
    u = urlsplit(url)
    return socket.create_connection((u.hostname, u.port), timeout=30), _target(url)


def _responses(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """Read `count` responses with Content-Length bodies from one connection."""
    out = []
    with sock.makefile("rb") as f:
        for _ in range(count):
            status = int(f.readline().split()[1])
            length = 0
            while (line := f.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            out.append((status, f.read(length)))
    return out


def _read_bytes(box: Box) -> int:
    return sum(t["bytes"] for t in box.usage().body["transfers"] if t["direction"] == "read")


def test_ranged_gets_reassemble_and_meter_exactly_what_was_sent(live_factory, artifact):
    box = Box(live_factory().http, artifact, AWS)
    box.open()
    data = os.urandom(3 << 20)
    assert box.checkpoint("step-00000001", {"model.bin": data}).status == 200
    url = box.read(place="aws/us-east-1").body["files"][0]["url"]
    spans = [(0, 1), (5, 70_000), (1 << 20, (2 << 20) + 7), (len(data) - 10, len(data) - 1)]
    sent = 0
    for a, b in spans:
        r = box.http.request("GET", url, key=None, headers={"Range": f"bytes={a}-{b}"})
        assert (r.status, r.content) == (206, data[a : b + 1])
        assert r.headers["Content-Range"] == f"bytes {a}-{b}/{len(data)}"
        sent += b + 1 - a
    assert box.http.request("GET", url, key=None).content == data
    assert _read_bytes(box) == sent + len(data)


def test_download_dropped_by_the_client_meters_only_what_left(live_factory, artifact):
    box = Box(live_factory().http, artifact, AWS)
    box.open()
    data = os.urandom(64 << 20)
    assert box.checkpoint("step-00000001", {"model.bin": data}).status == 200
    url = box.read(place="aws/us-east-1").body["files"][0]["url"]
    sock, target = _raw(url)
    with sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        received = b""
        while len(received) < 1 << 20:
            received += sock.recv(1 << 16)
        got = len(received) - received.index(b"\r\n\r\n") - 4  # body bytes, not headers
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    deadline = time.monotonic() + 120  # a hang guard, not a bound
    # The whole range is metered up front and corrected once the server sees the hang-up.
    while (metered := _read_bytes(box)) == len(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert got <= metered < len(data)


def test_put_then_pipelined_request_on_one_connection(live_factory, artifact):
    emu = live_factory()
    box = Box(emu.http, artifact, AWS)
    box.open()
    files = {"a.bin": os.urandom(3 << 20), "b.bin": b"small"}
    w = box.write("step-00000001", files)
    urls = {f["name"]: f["url"] for f in w.body["files"]}
    sock, target_a = _raw(urls["a.bin"])
    target_b = _target(urls["b.bin"])
    with sock:
        sock.sendall(
            f"PUT {target_a} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(files['a.bin'])}"
            "\r\n\r\n".encode() + files["a.bin"]
            + f"PUT {target_b} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\n"
            "small".encode()
            + b"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )
        (s1, b1), (s2, b2), (s3, _) = _responses(sock, 3)
    assert (s1, s2, s3) == (200, 200, 200)
    assert sha(files["a.bin"]).encode() in b1 and sha(b"small").encode() in b2
    assert box.commit(w.body["upload"]).status == 200


def test_put_refused_unread_still_frees_the_connection(live_factory, artifact):
    box = Box(live_factory().http, artifact, AWS)
    box.open()
    w = box.write("step-00000001", {"a.bin": b"x" * 10})
    sock, target = _raw(w.body["files"][0]["url"])
    with sock:
        sock.sendall(f"PUT {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 20\r\n"
                     "\r\n".encode()
                     + b"y" * 20 + b"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        (s1, b1), (s2, b2) = _responses(sock, 2)
    assert (s1, s2) == (413, 200) and b"payload_too_large" in b1 and b"ok" in b2
