"""A door in front of the session's S3 server that a test can shut: the emulator reaches
its storage through it, so the test stops that storage for a while (connections refused,
those in progress reset) or makes it answer 5xx, without stopping the server other tests
share."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on with 0 s: close() sends an RST
_FAILING = b"HTTP/1.1 %d Failing\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class S3Door:
    """A TCP forwarder on a fixed loopback port to `endpoint`: `shut()` closes the port and
    resets every connection through it, `open()` listens on the same port again, and
    `fail(status)` answers every request with that status until `open()`."""

    def __init__(self, endpoint: str) -> None:
        parts = urlsplit(endpoint)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.failing: int | None = None
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.open()

    def open(self) -> None:
        self.failing = None
        if self._listener is not None:
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def shut(self) -> None:
        """The storage is gone: new connections are refused, open ones reset."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept(); close() would not
            except OSError:
                pass
            listener.close()
        self._reset_all()

    def fail(self, status: int) -> None:
        """The storage answers every request with `status` (and drops kept-alive ones)."""
        self.failing = status
        self._reset_all()

    def close(self) -> None:
        self.shut()

    def _reset_all(self) -> None:
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:
            try:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                c.shutdown(socket.SHUT_RDWR)  # wakes its pump's recv; close() alone would not
                c.close()
            except OSError:
                pass

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # shut
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        if self.failing is not None:
            try:
                client.recv(65536)
                client.sendall(_FAILING % self.failing)
            except OSError:
                pass
            client.close()
            return
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        with self._lock:
            self._conns.update((client, server))
        threading.Thread(target=_pump, args=(server, client), daemon=True).start()
        _pump(client, server)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


@contextmanager
def s3_door(endpoint: str) -> Iterator[S3Door]:
    door = S3Door(endpoint)
    try:
        yield door
    finally:
        door.close()
