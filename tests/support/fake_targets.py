"""Tiny hostile targets on 127.0.0.1 for the tests of the conformance suite's own safety:
one that trickles its answers, one whose error codes carry escape sequences and lone
surrogates. Each serves in a daemon thread of the test process; the suite runs against it
in a subprocess (:func:`run_suite`), as a user would run it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_suite(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``pytest conformance ARGS`` in a subprocess, without the caller's key variables."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("O41_")}
    cmd = [sys.executable, "-m", "pytest", str(REPO / "conformance"), "-p", "no:cacheprovider",
           "-p", "no:schemathesis", "-p", "no:randomly", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**base, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})


Handler = Callable[[socket.socket, bytes], None]


@contextmanager
def raw_target(handle: Handler) -> Iterator[str]:
    """A server calling ``handle(conn, first_bytes)`` per connection; yields its URL."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(30)
                handle(conn, conn.recv(65536))
            except OSError:
                pass

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        srv.close()


def trickle_404(conn: socket.socket, _: bytes) -> None:
    """A 404 that promises 100000 bytes and sends one a second (the body takes 28 hours)."""
    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100000\r\n\r\n")
    for _ in range(60):
        conn.sendall(b" ")
        time.sleep(1)


def _reply(conn: socket.socket, status: int, body: object) -> None:
    data = json.dumps(body).encode()  # ASCII: a lone surrogate goes out as "\udcff"
    conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)


#: Error codes a hostile target sends: clear screen, cursor home, window title, erase line,
#: a bidi override and a lone surrogate (valid JSON, not encodable as UTF-8).
HOSTILE_CODES = ["\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "ok\x1b[2K\r", "\u202edesrever", "\udcff"]


def hostile_codes(conn: socket.socket, first: bytes) -> None:
    """Answers the probe as an o41 API would (404 not_found); every other call with an
    error whose code and message carry terminal escapes and a lone surrogate."""
    line = first.split(b"\r\n", 1)[0]
    if b"/artifacts/read" in line and b"probe" in line:
        _reply(conn, 404, {"error": {"code": "not_found", "message": "no such artifact"}})
        return
    code = "".join(HOSTILE_CODES)
    _reply(conn, 400, {"error": {"code": code, "message": f"bad {code}"},
                       "epoch": code, "resume_from": None})
