"""The physical limit: the same file's bytes over raw loopback sockets, with no HTTP.

`python -m bench.loopback FILE` listens on a free port, prints `READY <port>`, and for each
connection reads one line `start stop` and sends that byte range with sendfile (the fastest
way a server can move a cached file). `read_range` is the matching client, which receives
into a reused buffer exactly like the HTTP client does.
"""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

from .client import BUF


def _serve_one(conn: socket.socket, path: Path) -> None:
    with conn, open(path, "rb") as fh:
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(64)
            if not chunk:
                return
            line += chunk
        start, stop = (int(x) for x in line.split())
        conn.sendfile(fh, offset=start, count=stop - start)


def serve(path: Path) -> None:
    lsock = socket.create_server(("127.0.0.1", 0), backlog=64)
    print("READY", lsock.getsockname()[1], flush=True)
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=_serve_one, args=(conn, path), daemon=True).start()


def read_range(port: int, start: int, stop: int, check: bytes = b"") -> int:
    """Receive bytes [start, stop) from the loopback server; returns the byte count."""
    buf = bytearray(BUF)
    view = memoryview(buf)
    got = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"{start} {stop}\n".encode())
        while n := sock.recv_into(view):
            if got == 0 and check and bytes(view[: min(n, len(check))]) != check[:n]:
                raise RuntimeError(f"bytes at {start} differ from the file")
            got += n
    if got != stop - start:
        raise RuntimeError(f"loopback range {start}-{stop} gave {got} bytes")
    return got


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
