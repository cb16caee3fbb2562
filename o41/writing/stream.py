"""A file written through ``o41://`` goes up as it is written: one streamed PUT per file.

The contract's streamed files (VER-6) are S3 multipart's model without the parts: a file is
declared by name alone, and its PUT, chunked, takes a body of any length and answers the
size and sha256 it received; the commit lists them. So a written file is never staged
whole, on disk or in memory: the writer's bytes gather into parts of ``PART`` bytes, and a
sender thread hashes each part and sends it as one chunk of the PUT while the writer goes
on. At most ``BUFFER`` bytes (64 MiB by default) of one open file are in memory: a writer
that outruns the network waits, and part buffers, once sent, are filled again (never
more than ``BUFFER / PART + 2`` of them), so the bound does not depend on the allocator.
A large write of immutable ``bytes`` is sent from the caller's object, without a copy.
A file that ends before its first part is full goes as one
PUT with a ``Content-Length`` (retried on a dropped connection: its bytes are at hand).

On close the service's answer is checked against what the client hashed, and the file's
size and sha256 go to its launch's step (``o41.writing.launch``), for the commit. A file left by an
exception, or collected unclosed, is cut short: the PUT never ends, so nothing of it is
stored, and its step cannot commit until the file is written again.

Seeking: the bytes not yet handed to the sender can be rewritten (``seek`` back within
them, then ``write``); earlier bytes are on their way, and a seek before them raises
``io.UnsupportedOperation``. ``seekable()`` is False, so ``zipfile`` writes data
descriptors instead of patching headers. ``fileno()`` is an empty memory file: DCP's
``os.fsync(f.fileno())`` works and costs nothing (the close is what makes a file durable);
bytes written to it would be lost, so a close that finds any fails.

Files named like ``*.tmp`` (DCP's ``.metadata.tmp``, renamed onto ``.metadata`` once
written) are held in memory until renamed or committed: a name cannot change once its PUT
has begun.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from o41.transport.buffers import Buffer
from o41.transport.put import BUFFER, PART, Sender, check_answer, new_part, put_whole

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

class StreamFile(io.RawIOBase):
    """A file being written into a step: streamed to its signed URL as it is written.

    ``url`` gives the file's PUT URL when the first part is ready (or at close); ``done``
    is told ``(size, sha256)`` once the service answered; ``lost`` that the PUT was cut.
    With ``in_memory`` the bytes are kept and handed to ``done`` as ``(size, bytes)``.
    """

    def __init__(self, path: str, key: tuple[str, str], name: str, *, autocommit: bool,
                 url: Callable[[], str], done: Callable[[int, Any], None],
                 lost: Callable[[], None], in_memory: bool = False,
                 buffer: int = BUFFER) -> None:
        super().__init__()
        self.path, self.key, self.relname = path, key, name
        self.autocommit = autocommit
        self._url, self._done, self._lost = url, done, lost
        self.in_memory = in_memory
        self.limit = buffer
        self._buf: Buffer | None = None  # the part being filled (a whole held file)
        self._fill = 0  # bytes of _buf written
        self._base = 0  # offset in the file of _buf[0]
        self._pos = 0
        self._sender: Sender | None = None
        self._memfd = -1
        self.discarded = False

    # -- the file interface -----------------------------------------------------------

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self._check_open()
        end = self._base + self._fill
        target = pos if whence == 0 else self._pos + pos if whence == 1 else end + pos
        if target < self._base or target > end:
            raise io.UnsupportedOperation(
                f"{self.path}: a file written to o41:// streams as it is written; only its "
                f"last {self._fill} bytes (from byte {self._base}) can be rewritten")
        self._pos = target
        return target

    def fileno(self) -> int:
        """An empty memory file, so that ``os.fsync(f.fileno())`` works (and costs nothing)."""
        self._check_open()
        if self._memfd < 0:
            if not hasattr(os, "memfd_create"):
                raise io.UnsupportedOperation("fileno")
            self._memfd = os.memfd_create("o41-sync", os.MFD_CLOEXEC)
        return self._memfd

    def flush(self) -> None:
        pass

    def write(self, b: ReadableBuffer) -> int:  # type: ignore[override]
        self._check_open()
        view = memoryview(b).cast("B")
        n = len(view)
        end = self._base + self._fill
        if self._pos < end:  # rewriting bytes after a seek back
            assert self._buf is not None
            at = self._pos - self._base
            over = min(n, self._fill - at)
            self._buf[at:at + over] = view[:over]
            self._pos += over
            view = view[over:]
        if len(view):
            self._append(view, immutable=isinstance(b, bytes))
            self._pos += len(view)
        return n

    def _append(self, view: memoryview, immutable: bool) -> None:
        if self.in_memory:  # held whole until renamed: grows as written
            if self._buf is None:
                self._buf = bytearray()
            self._buf[self._fill:] = view
            self._fill += len(view)
            return
        while len(view):
            if self._fill == 0 and immutable and len(view) >= PART:
                self._hand(view[:PART], PART, pooled=False)  # a large write: no copy
                view = view[PART:]
                continue
            if self._buf is None:
                self._buf = self._sender.take() if self._sender else new_part()
            k = min(PART - self._fill, len(view))
            self._buf[self._fill:self._fill + k] = view[:k]
            self._fill += k
            view = view[k:]
            if self._fill == PART:
                buf, self._buf, self._fill = self._buf, None, 0
                self._hand(buf, PART, pooled=True)

    def _hand(self, part: bytes | Buffer | memoryview, n: int, pooled: bool) -> None:
        if self._sender is None:
            self._sender = Sender(self._url(), self.limit)
        self._sender.put(part, n, pooled)
        self._base += n

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    # -- ending -----------------------------------------------------------------------

    def __enter__(self) -> StreamFile:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None:
            self.discard()
        else:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self.discarded:
                return
            self._check_fileno()
            body = memoryview(self._buf or b"")[:self._fill]
            if self.in_memory:
                self._done(self._fill, bytes(body))
                return
            if self._sender is None:
                size, digest = self._fill, hashlib.sha256(body).hexdigest()
                answer = put_whole(self._url(), body)
            else:
                if self._fill:
                    self._sender.put(self._buf, self._fill)
                size, digest, answer = self._sender.finish()
            del body
            self._buf, self._fill = None, 0
            check_answer(self.relname, answer, size, digest)
            self._done(size, digest)
        except BaseException:
            self._cut()
            raise
        finally:
            self._release()
            super().close()

    def _check_fileno(self) -> None:
        if self._memfd >= 0 and os.fstat(self._memfd).st_size:
            raise io.UnsupportedOperation(
                f"{self.path}: bytes were written to fileno(); an o41:// file takes its bytes "
                "through write()")

    def commit(self) -> None:
        """fsspec's per-file commit: the step commits as a whole (``StepTransaction``)."""
        self.close()

    def discard(self) -> None:
        """Drop the file: its PUT is cut short, so nothing of it is stored."""
        if self.closed:
            return
        self.discarded = True
        self._cut()
        self._release()
        super().close()

    def _cut(self) -> None:
        if self._sender is not None:
            self._sender.abort()
            self._sender = None
        self._buf, self._fill = None, 0
        self._lost()

    def _release(self) -> None:
        if self._memfd >= 0:
            os.close(self._memfd)
            self._memfd = -1

    def __del__(self) -> None:
        # Collected while still open: its writer never finished it (an exception outside a
        # ``with`` block). Closing would upload it, and a marker would commit a torn step.
        try:
            if not self.closed:
                self.discard()
        except Exception:  # noqa: S110 - nothing to tell at collection
            pass


__all__ = ["BUFFER", "PART", "StreamFile"]
