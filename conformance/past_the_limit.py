"""A PUT whose Content-Length is past the target's file size limit, sent only as far as the
target lets it (VER-6.e against a target whose limit is far above what a test can send).

A target that knows the length from the header may refuse at once: 413 before the body.
The suite sends the body a piece at a time and looks, before each piece, whether the target
has answered; it stops at the first answer, or after ``most`` bytes. Then it closes its side
for sending, so a target still waiting for the rest sees the body end early instead of
waiting out its read timeout, and reads whatever answer comes. Only an answer that came
before the whole of ``most`` was sent is the target's verdict on the declared length.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from conformance.transport import DEADLINES
from conformance.transport import watch_for

__all__ = ["EarlyAnswer", "put_declared_past"]

PIECE = 64 << 10


@dataclass(frozen=True)
class EarlyAnswer:
    """What the target answered, and whether it answered before the body was cut short."""

    status: int | None
    body: Any
    sent: int
    early: bool

    def code(self) -> str | None:
        err = self.body.get("error") if isinstance(self.body, dict) else None
        return err.get("code") if isinstance(err, dict) else None


def _connection(url: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    timeout = DEADLINES.request
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.netloc, timeout=timeout,
                                           context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.netloc, timeout=timeout)
    return conn, parts.path + (f"?{parts.query}" if parts.query else "")


def put_declared_past(url: str, length: int, most: int) -> EarlyAnswer:
    """PUT ``url`` with ``Content-Length: length`` and at most ``most`` zero bytes of it."""
    conn, path = _connection(url)
    watch = watch_for(DEADLINES.request)  # the whole exchange ends by the request deadline
    sent, early = 0, False
    try:
        conn.putrequest("PUT", path, skip_accept_encoding=True)
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        sock = conn.sock
        assert sock is not None
        watch.attach(sock)
        piece = bytes(PIECE)
        while sent < most:
            if select.select([sock], [], [], 0)[0]:
                early = True  # an answer (or the target closing) before the body was done
                break
            try:
                sock.sendall(piece[: min(PIECE, most - sent)])
            except (BrokenPipeError, ConnectionResetError):
                early = True  # it stopped reading: it answered or gave up on the body
                break
            sent += min(PIECE, most - sent)
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        try:
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            return EarlyAnswer(None, None, sent, early)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        return EarlyAnswer(resp.status, body, sent, early)
    finally:
        watch.finish()
        conn.close()
