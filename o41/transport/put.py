"""One file's PUT to its signed URL: a chunked PUT fed part by part from the writer's
thread and hashed on the way (``Sender``), or one PUT with a ``Content-Length`` for a file
that ends within its first part (``put_whole``, retried: its bytes are at hand); and the
check that the service received what the client hashed (VER-6)."""

from __future__ import annotations

import hashlib
import http.client
import json
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from o41.errors import IntegrityError, PayloadTooLarge, TransportError
from o41.job import hooks
from o41.transport import retry
from o41.transport.buffers import Buffer, zeroed
from o41.transport.signed import NETWORK_ERRORS, Connections, Retry, data_plane_error, put

PART = 8 * 1024 * 1024
BUFFER = 64 * 1024 * 1024  # bytes of one open file held in memory, at most
TIMEOUT = 120.0
_END = object()
SPARE = 4  # sent part buffers kept for the process's next file (a DCP save writes many)
_spare: list[Buffer] = []
_spare_lock = threading.Lock()


def new_part() -> Buffer:
    """A part buffer a finished file left, else a new one: a fresh 8 MiB costs a page fault
    per 4 KiB on its first fill, more than copying into a warm one (a new one is mapped
    whole in one call: ``o41.transport.buffers``)."""
    with _spare_lock:
        if _spare:
            return _spare.pop()
    return zeroed(PART)


def _keep_parts(parts: list[Buffer]) -> None:
    with _spare_lock:
        room = SPARE - len(_spare)
        _spare.extend(parts[:max(0, room)])


class Sender:
    """One chunked PUT, fed part by part from the writer's thread, hashed on the way."""

    def __init__(self, url: str, limit: int = BUFFER) -> None:
        self.url = url
        self.limit = max(limit, PART)
        self.parts: deque[Any] = deque()  # (buffer, bytes of it to send, pooled) or _END
        self.free: list[Buffer] = []  # sent part buffers, for the writer to fill again
        self.queued = 0
        self.cond = threading.Condition()
        self.sha = hashlib.sha256()
        self.size = 0
        self.error: BaseException | None = None
        self.reply: tuple[int, bytes] | None = None
        self.conn: http.client.HTTPConnection | None = None
        self.thread = threading.Thread(target=self._run, name="o41-put", daemon=True)
        self.thread.start()

    def put(self, part: Any, n: int | None = None, pooled: bool = False) -> None:
        """Queue the first ``n`` bytes of ``part`` (a buffer of the writer's, given back
        through ``take`` once sent when ``pooled``, or a read-only view), waiting while the
        queue is full."""
        n = len(part) if n is None else n
        with self.cond:
            while self.queued and self.queued + n > self.limit and self.error is None:
                self.cond.wait()
            if self.error is not None:
                raise self.error
            self.parts.append((part, n, pooled))
            self.queued += n
            self.cond.notify_all()

    def take(self) -> Buffer:
        """A part buffer to fill: one already sent, else a new one. At most
        ``limit / PART + 2`` are ever made, so memory stays bounded whatever malloc does."""
        with self.cond:
            if self.free:
                return self.free.pop()
        return new_part()

    def finish(self) -> tuple[int, str, dict[str, Any]]:
        """End the body and wait for the answer: (size, sha256 sent, the reply's JSON)."""
        with self.cond:
            self.parts.append(_END)
            self.cond.notify_all()
        self.thread.join()
        _keep_parts(self.free)
        self.free = []
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.size, self.sha.hexdigest(), answer_of(self.url, *self.reply)

    def abort(self) -> None:
        """Cut the PUT short: the body never ends, so the service stores nothing."""
        with self.cond:
            if self.error is None:
                self.error = TransportError("the write was abandoned")
            self.parts.clear()
            self.cond.notify_all()
        conn = self.conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(2)
            except OSError:
                pass
        self.thread.join()
        if conn is not None:
            conn.close()

    def _run(self) -> None:
        u = urlsplit(self.url)
        target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        try:
            conn = self.conn = cls(u.netloc, timeout=TIMEOUT)
            conn.putrequest("PUT", target, skip_accept_encoding=True)
            conn.putheader("Transfer-Encoding", "chunked")
            conn.putheader("Content-Type", "application/octet-stream")
            conn.endheaders()
            sock = conn.sock
            while True:
                with self.cond:
                    while not self.parts and self.error is None:
                        self.cond.wait()
                    if self.error is not None:
                        return
                    item = self.parts[0]
                if item is _END:
                    sock.sendall(b"0\r\n\r\n")
                    resp = conn.getresponse()
                    self.reply = (resp.status, resp.read())
                    return
                part, n, pooled = item
                data = memoryview(part)[:n]
                self.sha.update(data)
                sock.sendall(b"%x\r\n" % n)
                sock.sendall(data)
                sock.sendall(b"\r\n")
                del data
                with self.cond:
                    self.parts.popleft()
                    self.queued -= n
                    self.size += n
                    if pooled:
                        self.free.append(part)
                    self.cond.notify_all()
        except NETWORK_ERRORS as exc:
            error: BaseException = self._early_answer() or TransportError(
                f"PUT {_short(self.url)}: the connection failed mid-file: {exc}")
            with self.cond:
                self.error = self.error or error
                self.cond.notify_all()
        except BaseException as exc:
            with self.cond:
                self.error = self.error or exc
                self.cond.notify_all()
        finally:
            if self.conn is not None:
                self.conn.close()

    def _early_answer(self) -> BaseException | None:
        """A refusal the service sent before the body ended (413 past its limit, 403)."""
        conn = self.conn
        if conn is None or conn.sock is None or self.error is not None:
            return None
        try:
            conn.sock.settimeout(2.0)
            resp = conn.getresponse()
            body = resp.read()
        except (NETWORK_ERRORS, ValueError):
            return None
        try:
            answer_of(self.url, resp.status, body)
        except (TransportError, PayloadTooLarge) as exc:
            return exc
        return None


def _short(url: str) -> str:
    return urlsplit(url).path.rsplit("/", 1)[-1] or url


def answer_of(url: str, status: int, body: bytes) -> dict[str, Any]:
    """The PUT's ``{name, size, sha256}``; an error reply as the client's error."""
    if status == 413:
        raise PayloadTooLarge(f"PUT {_short(url)}: payload_too_large: the file is over the "
                              "service's limit for one file; nothing of it was stored",
                              status=413)
    if status >= 400:
        raise data_plane_error(f"PUT {_short(url)}", status, body)
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


_small = Connections()  # PUTs of files that end within one part: keep-alive, per thread
hooks.at_exit(_small.close)


def put_whole(url: str, body: bytes | memoryview) -> dict[str, Any]:
    """PUT a whole small file with its Content-Length, tried again under the retry policy."""
    return put_retried(_small, url, body, len(body), _short(url))


def put_retried(conns: Connections, url: str, body: bytes | memoryview | Path, size: int,
                name: str, tick: Callable[[int], None] = lambda n: None) -> dict[str, Any]:
    """One PUT of bytes at hand (or a file), tried again while it fails transiently: a
    signed URL's PUT stores nothing until its body is whole, so sending it again is safe."""
    tries = retry.attempts("PUT", name)
    while True:
        try:
            reply = put(conns, url, body, size, tick)
        except Retry as exc:
            tries.failed(TransportError(f"PUT {name}: {exc}"))
            continue
        try:
            return answer_of(url, reply.status, reply.body)
        except (TransportError, PayloadTooLarge) as exc:
            tries.status(reply.status, reply.retry_after, exc)


def check_answer(name: str, answer: dict[str, Any], size: int, sha256: str) -> None:
    """The service received what the client wrote, or the write fails (VER-6)."""
    got = (answer.get("size"), answer.get("sha256"))
    if got != (size, sha256):
        raise IntegrityError(f"{name}: wrote {size} bytes with sha256 {sha256}, the service "
                             f"received {got[0]} bytes with sha256 {got[1]}")


def put_path(url: str, path: Path | None, size: int, conns: Connections | None = None,
             tick: Callable[[int], None] = lambda n: None) -> dict[str, Any]:
    """PUT a local file with ``sendfile``, tried again under the retry policy (on ``conns``'
    keep-alive connections when given, else on a connection of its own)."""
    assert path is not None
    if conns is not None:
        return put_retried(conns, url, path, size, str(path), tick)
    own = Connections()
    try:
        return put_retried(own, url, path, size, str(path), tick)
    finally:
        own.close()


def put_path_hashed(url: str, path: Path, conns: Connections | None = None,
                    tick: Callable[[int], None] = lambda n: None
                    ) -> tuple[dict[str, Any], int, str]:
    """PUT a local file with ``sendfile`` while its sha256 is computed on a helper thread
    (both release the GIL): one pass over the page cache's pages each, side by side, instead
    of a hash pass and then a send. Returns (the PUT's answer, size, sha256)."""
    size = path.stat().st_size
    digest: list[str] = []
    failed: list[BaseException] = []

    def hash_it() -> None:
        try:
            with open(path, "rb") as f:
                digest.append(hashlib.file_digest(f, "sha256").hexdigest())
        except BaseException as exc:  # re-raised in the caller's thread
            failed.append(exc)

    hasher = threading.Thread(target=hash_it, name="o41-put-sha256", daemon=True)
    hasher.start()
    try:
        answer = put_path(url, path, size, conns, tick)
    finally:
        hasher.join()
    if failed:
        raise failed[0]
    return answer, size, digest[0]


__all__ = ["BUFFER", "PART", "Sender", "answer_of", "check_answer", "new_part", "put_path",
           "put_path_hashed", "put_retried", "put_whole"]
