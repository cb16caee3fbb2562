"""Tools to hold a request in the middle: a body that stops half-way, a raw-socket PUT,
and a pause point that blocks one chosen thread inside the server's code."""

from __future__ import annotations

import io
import json
import socket
import threading
from contextlib import contextmanager
from urllib.parse import urlsplit

HOLD_SECONDS = 30  # a held request never waits longer, so a broken test cannot hang CI


class HeldBody(io.RawIOBase):
    """A request body that delivers `hold_at` bytes, then waits for `release()`; then it
    delivers the rest, or ends there as a client that hung up."""

    def __init__(self, data: bytes, hold_at: int) -> None:
        self.data, self.hold_at, self.pos = data, hold_at, 0
        self.reached, self._go = threading.Event(), threading.Event()
        self.hang_up = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:  # werkzeug's test client measures a body by seeking
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else len(self.data) + offset if whence == 2 \
            else self.pos + offset
        return self.pos

    def release(self, hang_up: bool = False) -> None:
        self.hang_up = hang_up
        self._go.set()

    def readinto(self, buf) -> int:
        if self.pos == self.hold_at:
            self.reached.set()
            assert self._go.wait(HOLD_SECONDS), "the test never released the body"
            if self.hang_up:
                return 0
        end = len(self.data) if self.pos >= self.hold_at else self.hold_at
        n = min(len(buf), end - self.pos)
        buf[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


class Background(threading.Thread):
    """Run one call on a thread and keep its result (or exception) for the test."""

    def __init__(self, fn, *args, name: str | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.fn, self.args = fn, args
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn(*self.args)
        except BaseException as exc:  # handed to the test by outcome()
            self.error = exc

    def outcome(self):
        self.join(HOLD_SECONDS)
        assert not self.is_alive(), "the background call never finished"
        if self.error is not None:
            raise self.error
        return self.result


@contextmanager
def paused_at(monkeypatch, point: str, thread_name: str):
    """Block the thread named `thread_name` when it reaches `point` in emulator.rules.uploads.

    Yields (reached, release) events; other threads pass the point freely.
    """
    import emulator.rules.uploads

    reached, release = threading.Event(), threading.Event()

    def pause(where: str) -> None:
        if where == point and threading.current_thread().name == thread_name:
            reached.set()
            assert release.wait(HOLD_SECONDS), "the test never released the pause"

    monkeypatch.setattr(emulator.rules.uploads, "pause", pause)
    try:
        yield reached, release
    finally:
        release.set()


class RawPut:
    """A PUT over a raw socket, so a test can stop sending mid-body for as long as it likes."""

    def __init__(self, url: str, length: int) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        head = (
            f"PUT {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n"
            "Connection: close\r\n\r\n"
        )
        self.sock.sendall(head.encode())

    def send(self, data: bytes) -> bool:
        """Send more of the body; False if the server answered early and stopped reading."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def reply(self) -> tuple[int, dict | None]:
        """Status and JSON body of the server's answer (then the socket is closed); status 0
        if the server reset the connection before its answer could be read."""
        chunks = []
        try:
            while chunk := self.sock.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            if not chunks:
                return 0, None
        finally:
            self.sock.close()
        raw = b"".join(chunks)
        head, _, body = raw.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        try:
            return status, json.loads(body)
        except ValueError:
            return status, None

    def hang_up(self) -> None:
        self.sock.close()
