"""One retry policy for every call and byte: transient replies (503 with Retry-After, 5xx, cut
connections) are ridden out for longer than a handful of tries, Retry-After is honoured, and
a 4xx is never sent twice.

The waits are recorded instead of slept (``o41.transport.retry.sleep``): the tests count
requests and read the waits the client asked for, never the clock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from o41 import FileEntry, TransportError
from o41.errors import ApiError, PayloadTooLarge, ServerError
from o41.local import LocalFile
from o41.transport import memread, retry
from o41.transport.api import ApiClient
from o41.transport.put import put_path, put_whole
from o41.transport.transfer import download, upload

# Today's client gave up a data-plane transfer after 5 tries (about a second) and an API
# call after 20 s; an outage of tens of seconds is many more refusals than either.
REFUSALS = 25


@dataclass
class Outage:
    """A data plane and API that refuse the first ``refusals`` requests with ``status``
    (and ``Retry-After``), then serve: PUT stores, GET serves ranges, /api/v1 answers JSON."""

    status: int = 503
    retry_after: str | None = "1"
    refusals: int = REFUSALS
    files: dict[str, bytes] = field(default_factory=dict)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    base: str = ""

    def refuse(self) -> bool:
        with self.lock:
            self.requests += 1
            if self.refusals > 0:
                self.refusals -= 1
                return True
            return False


def _handler(state: Outage) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            """Quiet: tests read ``state``."""

        def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def refused(self) -> bool:
            if not state.refuse():
                return False
            code = "unavailable" if state.status == 503 else "invalid_argument"
            body = json.dumps({"error": {"code": code, "message": "down"}}).encode()
            headers = {"Retry-After": state.retry_after} if state.retry_after else {}
            self.reply(state.status, body, headers)
            return True

        def do_PUT(self) -> None:  # noqa: N802 - http.server's naming
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.refused():
                return
            state.files[self.path.lstrip("/")] = data
            answer = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            self.reply(200, json.dumps(answer).encode())

        def do_GET(self) -> None:  # noqa: N802
            if self.refused():
                return
            if self.path.startswith("/api/v1/"):
                self.reply(200, json.dumps({"artifact": "p/n", "epoch": 3}).encode())
                return
            data = state.files[self.path.lstrip("/")]
            start, end = 0, len(data) - 1
            if m := re.match(r"bytes=(\d+)-(\d+)", self.headers.get("Range", "")):
                start, end = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
            self.reply(206, data[start:end + 1],
                       {"Content-Range": f"bytes {start}-{end}/{len(data)}"})

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if not self.refused():
                self.reply(200, json.dumps({"artifact": "p/n", "epoch": 3}).encode())

    return Handler


@pytest.fixture
def outage() -> Iterator[Outage]:
    state = Outage()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the client asks for between tries, recorded instead of slept."""
    asked: list[float] = []
    monkeypatch.setattr(retry, "sleep", asked.append)
    return asked


def stored(state: Outage, name: str, data: bytes) -> FileEntry:
    state.files[name] = data
    return FileEntry(name, len(data), hashlib.sha256(data).hexdigest(), f"{state.base}/{name}")


def test_a_whole_put_rides_out_503s_and_waits_as_retry_after_asks(outage, waits):
    data = os.urandom(1000)
    answer = put_whole(f"{outage.base}/a.bin", data)
    assert answer["sha256"] == hashlib.sha256(data).hexdigest()
    assert outage.files["a.bin"] == data
    assert outage.requests == REFUSALS + 1
    assert len(waits) == REFUSALS and min(waits) >= 1.0  # Retry-After: 1, every time


def test_a_put_of_a_file_and_an_upload_ride_out_503s(outage, waits, tmp_path: Path):
    path = tmp_path / "w.bin"
    path.write_bytes(os.urandom(3 << 20))
    put_path(f"{outage.base}/w.bin", path, path.stat().st_size)
    assert outage.files["w.bin"] == path.read_bytes()
    outage.refusals = REFUSALS
    local = LocalFile("u.bin", path.stat().st_size, "", path=path)
    upload([local], {"u.bin": f"{outage.base}/u.bin"})
    assert outage.files["u.bin"] == path.read_bytes()
    assert outage.requests == 2 * (REFUSALS + 1)


def test_a_download_and_a_read_into_memory_ride_out_503s(outage, waits, tmp_path: Path):
    data = os.urandom(2 << 20)
    entry = stored(outage, "r.bin", data)
    assert memread.read_range(entry) == data
    outage.refusals = REFUSALS
    [path] = download([entry], tmp_path, workers=1)
    assert path.read_bytes() == data
    assert outage.requests == 2 * (REFUSALS + 1)
    assert len(waits) == 2 * REFUSALS and min(waits) >= 1.0


def test_an_api_call_rides_out_503s_beyond_twenty_seconds_of_tries(outage, waits):
    outage.retry_after = "2"
    api = ApiClient(f"{outage.base}/api/v1", "ak_local")
    assert api.read_artifact("p/n")["epoch"] == 3
    assert outage.requests == REFUSALS + 1
    assert sum(waits) > 20.0  # past the old 20 s window: Retry-After: 2, each time
    outage.refusals = REFUSALS
    assert api.open("p/n", resume=None, place=None, holder=None)["epoch"] == 3


@pytest.mark.parametrize("status", [400, 403, 404, 409])
def test_a_4xx_is_sent_once_by_every_path(outage, waits, tmp_path: Path, status: int):
    outage.status, outage.retry_after, outage.refusals = status, "1", 10_000
    entry = FileEntry("x.bin", 10, "0" * 64, f"{outage.base}/x.bin")
    path = tmp_path / "x.bin"
    path.write_bytes(b"0123456789")
    calls = {
        "put_whole": lambda: put_whole(entry.url or "", b"0123456789"),
        "put_path": lambda: put_path(entry.url or "", path, 10),
        "upload": lambda: upload([LocalFile("x.bin", 10, "", path=path)],
                                 {"x.bin": entry.url or ""}),
        "read_range": lambda: memread.read_range(entry),
        "download": lambda: download([entry], tmp_path / "d"),
        "api": lambda: ApiClient(f"{outage.base}/api/v1", "ak_local").read_artifact("p/n"),
    }
    for name, call in calls.items():
        before = outage.requests
        with pytest.raises((TransportError, ApiError)) as info:
            call()
        assert info.value.status == status, name
        assert outage.requests == before + 1, name
    assert waits == []


def test_a_413_with_retry_after_is_not_retried(outage, waits):
    outage.status, outage.refusals = 413, 10_000
    with pytest.raises(PayloadTooLarge):
        put_whole(f"{outage.base}/big.bin", b"x" * 100)
    assert outage.requests == 1 and waits == []


def test_a_lasting_outage_surfaces_once_the_policys_time_is_spent(outage, waits, monkeypatch):
    outage.refusals = 10_000
    monkeypatch.setattr(retry, "POLICY", retry.Policy(seconds=0.0))
    with pytest.raises(ServerError) as info:
        ApiClient(f"{outage.base}/api/v1", "ak_local").read_artifact("p/n")
    assert info.value.status == 503
    with pytest.raises(TransportError) as cut:
        put_whole(f"{outage.base}/a.bin", b"abc")
    assert cut.value.status == 503
    monkeypatch.setattr(retry, "POLICY", retry.Policy(tries=4))
    before = outage.requests
    with pytest.raises(TransportError):
        memread.read_range(stored(outage, "b.bin", b"abc"))
    assert outage.requests == before + 4
