"""HTTP to signed URLs: ranged GETs received into caller memory, PUTs sent by sendfile.

``requests`` hands a body over as fresh ``bytes`` objects (one allocation and one copy per
block, in Python); a restore is then bound by the client, not by the disk. Here each worker
thread keeps one keep-alive ``http.client`` connection per host and receives with
``readinto`` into a buffer it reuses, so a byte is copied once, by the kernel, before it is
written or hashed. A PUT of a file hands the socket the file itself (``sendfile``): its
bytes go from the page cache to the socket without passing through Python.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from o41.errors import TransportError

TIMEOUT = 60.0
NETWORK_ERRORS = (OSError, http.client.HTTPException)


class Retry(Exception):
    """A data-plane reply worth asking again (5xx, a cut body, a dropped connection):
    ``status`` and ``retry_after`` of the reply when one came, for the retry policy."""

    def __init__(self, message: str, status: int | None = None,
                 retry_after: str | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


@dataclass(frozen=True)
class Reply:
    """A PUT's answer: status, body and ``Retry-After``."""

    status: int
    body: bytes
    retry_after: str | None = None


class Connections:
    """One keep-alive connection per (scheme, host) and thread; ``close`` ends them all."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._made: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _open(self) -> dict[tuple[str, str], http.client.HTTPConnection]:
        if not hasattr(self._local, "open"):
            self._local.open = {}
        return self._local.open

    def get(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        conn = self._open().get((scheme, netloc))
        if conn is None:
            cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            conn = cls(netloc, timeout=TIMEOUT)
            self._open()[(scheme, netloc)] = conn
            with self._lock:
                self._made.append(conn)
        return conn

    def drop(self, scheme: str, netloc: str) -> None:
        conn = self._open().pop((scheme, netloc), None)
        if conn is not None:
            conn.close()
            with self._lock:  # a long-lived set of connections must not keep dead ones
                if conn in self._made:
                    self._made.remove(conn)

    def close(self) -> None:
        with self._lock:
            made, self._made = self._made, []
        for conn in made:
            conn.close()


def error_message(status: int, body: bytes) -> str:
    """The contract's ``error.message`` of a data-plane reply, else the start of the body."""
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode(errors="replace")


def data_plane_error(method: str, status: int, body: bytes) -> TransportError:
    hint = " (signed URL rejected or expired)" if status == 403 else ""
    return TransportError(f"{method} signed URL: HTTP {status}{hint}: "
                          f"{error_message(status, body)}", status=status)


class RangeReply:
    """An open ranged GET: check it, then ``readinto`` until the range is in."""

    def __init__(self, conns: Connections, url: str, start: int, end: int) -> None:
        u = urlsplit(url)
        self.conns, self.key = conns, (u.scheme, u.netloc)
        target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        headers = {"Range": f"bytes={start}-{end}"}
        for attempt in (1, 2):  # a keep-alive connection the server closed fails once
            conn = conns.get(*self.key)
            try:
                conn.request("GET", target, headers=headers)
                self.resp = conn.getresponse()
                break
            except NETWORK_ERRORS as exc:
                conns.drop(*self.key)
                if attempt == 2:
                    raise Retry(f"GET bytes {start}-{end}: {exc}") from exc

    @property
    def status(self) -> int:
        return self.resp.status

    def header(self, name: str) -> str:
        return self.resp.getheader(name) or ""

    def body(self) -> bytes:
        """The whole (small, error) body; the connection stays usable."""
        try:
            return self.resp.read(64 * 1024)
        except NETWORK_ERRORS:
            self.abandon()
            return b""

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` from the body (fewer bytes only at its end); a cut body is ``Retry``."""
        try:
            n = self.resp.readinto(view)
        except NETWORK_ERRORS as exc:
            self.abandon()
            raise Retry(str(exc) or type(exc).__name__) from exc
        return n

    def finish(self) -> None:
        """After the whole body: keep the connection for the next range."""
        if not self.resp.isclosed():
            self.abandon()

    def abandon(self) -> None:
        """Stop mid-body: the connection cannot carry another request."""
        self.resp.close()
        self.conns.drop(*self.key)


SEND_STEP = 8 * 1024 * 1024


def put(conns: Connections, url: str, body: bytes | memoryview | Path, size: int,
        tick: Callable[[int], None]) -> Reply:
    """PUT ``body`` (bytes in memory, or a file sent with ``sendfile``); returns its reply.

    Network failures are ``Retry``: the PUT of a signed URL may simply be sent again.
    """
    u = urlsplit(url)
    key = (u.scheme, u.netloc)
    target = (u.path or "/") + (f"?{u.query}" if u.query else "")
    conn = conns.get(*key)
    try:
        conn.putrequest("PUT", target, skip_accept_encoding=True)
        conn.putheader("Content-Length", str(size))
        conn.putheader("Content-Type", "application/octet-stream")
        conn.endheaders()
        if not isinstance(body, Path):
            conn.sock.sendall(body)  # bytes or a memoryview go without a copy
            tick(size)
        else:
            with open(body, "rb") as f:
                sent = 0
                while sent < size:
                    n = conn.sock.sendfile(f, sent, min(SEND_STEP, size - sent))
                    if n == 0:
                        raise OSError(f"{body} ended at byte {sent} of {size}")
                    sent += n
                    tick(n)
        resp = conn.getresponse()
        reply = resp.read()
    except NETWORK_ERRORS as exc:
        conns.drop(*key)
        raise Retry(str(exc) or type(exc).__name__) from exc
    if resp.will_close:
        conns.drop(*key)
    return Reply(resp.status, reply, resp.getheader("Retry-After"))


__all__ = ["Connections", "RangeReply", "Reply", "Retry", "data_plane_error", "put"]
