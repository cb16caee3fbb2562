"""`wsgi.input` of a chunked PUT (a streamed file, VER-6), parsed from the client socket.

gunicorn's ChunkedReader passes every byte through its read-ahead buffer, a generator and
two BytesIO buffers before the app's own buffer: about five copies, more CPU than the
sha256 of the same bytes. Here a chunk's bytes are received straight into the caller's
buffer (`recv_into`); only the few bytes of each chunk-size line and of the trailer go
through a small buffer. When the last chunk has been read, what followed it on the
connection is handed back to gunicorn and its reader is left finished, so keep-alive still
finds the next request.
"""

from __future__ import annotations

import socket
from typing import NoReturn

from gunicorn.http.body import Body

from ..core.errors import InvalidArgument

LINE_MAX = 4096  # a chunk-size line with extensions; gunicorn's default field limit
TRAILER_MAX = 64 * 1024
RECV = 64 * 1024  # what is read at a time when looking for a line's end


class ChunkedSocketBody:
    """`wsgi.input` of one chunked PUT, read from the client socket itself."""

    def __init__(self, body: Body, sock: socket.socket, cut: str) -> None:
        self.body, self.sock, self.cut = body, sock, cut
        self.reader = body.reader
        self.unreader = self.reader.req.unreader
        self.pending = bytearray(self.unreader.buf.getvalue())  # read along with the headers
        self.unreader.buf.seek(0)
        self.unreader.buf.truncate()
        self.left = 0  # bytes of the current chunk not yet read
        self.first = True
        self.done = False

    def readinto(self, buf: memoryview | bytearray) -> int:
        view = memoryview(buf).cast("B")
        if self.done or not len(view):
            return 0
        if self.left == 0:
            self.left = self._next_size()
            if self.left == 0:
                self._end()
                return 0
        want = min(len(view), self.left)
        if self.pending:
            n = min(want, len(self.pending))
            view[:n] = self.pending[:n]
            del self.pending[:n]
        else:
            n = self._recv_into(view, want)
        self.left -= n
        return n

    def read(self, size: int | None = -1) -> bytes:
        """Up to `size` bytes (the whole rest when negative), short only at the end."""
        out = bytearray()
        step = RECV if size is None or size < 0 else size
        while size is None or size < 0 or len(out) < size:
            chunk = bytearray(step if size is None or size < 0 else size - len(out))
            n = self.readinto(chunk)
            if n == 0:
                break
            out += memoryview(chunk)[:n]
        return bytes(out)

    def give_back(self) -> None:
        """Return unread read-ahead to gunicorn (only a body the app left unread has any:
        gunicorn then drains it through its own reader)."""
        if self.pending and not self.done:
            self.unreader.unread(bytes(self.pending))
            self.pending = bytearray()

    # -- the framing --------------------------------------------------------------------

    def _next_size(self) -> int:
        if not self.first:  # the CRLF that ends the previous chunk's data
            self._need(2)
            if self.pending[:2] != b"\r\n":
                self._malformed()
            del self.pending[:2]
        self.first = False
        line = self._line(LINE_MAX)
        digits = line.split(b";", 1)[0].rstrip(b" \t")
        if not digits or any(c not in b"0123456789abcdefABCDEF" for c in digits):
            self._malformed()
        return int(digits, 16)

    def _end(self) -> None:
        """After the last chunk: the trailer section, up to its empty line."""
        total = 0
        while line := self._line(TRAILER_MAX):
            total += len(line)
            if total > TRAILER_MAX:
                self._malformed()
        self.done = True
        rest, self.pending = bytes(self.pending), bytearray()
        if rest:  # a pipelined next request
            self.unreader.unread(rest)
        self.reader.parser = None  # gunicorn's reader: finished, nothing left to drain
        self.reader.buf.seek(0)
        self.reader.buf.truncate()

    def _line(self, limit: int) -> bytes:
        """The next CRLF-ended line, without its CRLF."""
        searched = 0
        while (end := self.pending.find(b"\r\n", searched)) < 0:
            if len(self.pending) > limit:
                self._malformed()
            searched = max(0, len(self.pending) - 1)
            self._more()
        line = bytes(self.pending[:end])
        del self.pending[:end + 2]
        return line

    def _need(self, n: int) -> None:
        while len(self.pending) < n:
            self._more()

    def _more(self) -> None:
        chunk = bytearray(RECV)
        n = self._recv_into(memoryview(chunk), RECV)
        self.pending += memoryview(chunk)[:n]

    def _recv_into(self, view: memoryview, n: int) -> int:
        try:
            got = self.sock.recv_into(view, n)
        except TimeoutError:
            self.body.failed = True  # the connection is unusable: gunicorn closes it
            raise  # a stalled client: its own 400 (web/error_bodies.py)
        except OSError:
            self.body.failed = True
            raise InvalidArgument(self.cut) from None  # reset by the client: bad input
        if got == 0:  # the client hung up before the last chunk
            self.body.failed = True
            raise InvalidArgument(self.cut)
        return got

    def _malformed(self) -> NoReturn:
        self.body.failed = True
        raise InvalidArgument(self.cut)


__all__ = ["ChunkedSocketBody"]
