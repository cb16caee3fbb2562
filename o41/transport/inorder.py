"""The sha256 of a file whose blocks arrive out of order, hashed while it downloads.

Hashing after the download costs a second pass over the file on one core: at a restore's
speed that pass is a third of the time. Here the thread that lands the block at the hash
frontier hashes it from the buffer it was received into (hashlib releases the GIL, so the
other threads keep receiving), then drains every block already written beyond it, reading
those back from the page cache. Blocks that land elsewhere are only noted, so no thread
waits on another's hashing.
"""

from __future__ import annotations

import hashlib
import os
import threading

READ_BACK = 4 * 1024 * 1024


class ReadBack:
    """A thread's buffer to read written blocks back into, made on its first use: most
    blocks land at the hash frontier and are hashed from the receive buffer, so most
    downloads never need one (eight fresh 4 MiB buffers cost ~40 MiB of page faults)."""

    def __init__(self, size: int = READ_BACK) -> None:
        self.size = size
        self._view: memoryview | None = None

    def view(self) -> memoryview:
        if self._view is None:
            self._view = memoryview(bytearray(self.size))
        return self._view


class InOrderHash:
    """sha256 over ``fd``'s bytes as blocks ``[start, end)`` are reported written."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.digest = hashlib.sha256()
        self.hashed = 0
        self._starts: dict[int, int] = {}  # written but not hashed: start -> end
        self._ends: dict[int, int] = {}    # the same intervals: end -> start
        self._busy = False
        self._lock = threading.Lock()

    def note(self, start: int, end: int) -> None:
        """Bytes ``[start, end)`` are on disk (e.g. from an interrupted earlier run)."""
        with self._lock:
            self._add(start, end)

    def written(self, start: int, data: memoryview, scratch: ReadBack) -> None:
        """``data`` was written at ``start``; hash it now if it is next in line.

        ``scratch`` is the caller's buffer to read later blocks back into.
        """
        end = start + len(data)
        with self._lock:
            if self._busy or start != self.hashed:
                self._add(start, end)
                return
            self._busy = True
        try:
            self.digest.update(data)
        except BaseException:
            with self._lock:
                self._busy = False
            raise
        self._drain(end, scratch)

    def finish(self, scratch: ReadBack) -> str:
        """Hash whatever is still pending (all writers are done) and return the hex digest."""
        with self._lock:
            self._busy = True
        self._drain(self.hashed, scratch)
        return self.digest.hexdigest()

    def _drain(self, upto: int, scratch: ReadBack) -> None:
        """Advance the frontier over written blocks; gives up ``_busy`` in the same lock
        that finds nothing more, so a block noted meanwhile is never left behind."""
        try:
            while True:
                with self._lock:
                    self.hashed = upto
                    end = self._starts.pop(upto, None)
                    if end is None:
                        self._busy = False
                        return
                    del self._ends[end]
                buf = scratch.view() if upto < end else None
                while buf is not None and upto < end:
                    n = os.preadv(self.fd, [buf[: min(len(buf), end - upto)]], upto)
                    if n <= 0:
                        raise OSError(f"short read at byte {upto} of a downloaded file")
                    self.digest.update(buf[:n])
                    upto += n
        except BaseException:
            with self._lock:
                self._busy = False
            raise

    def _add(self, start: int, end: int) -> None:
        if start >= end:
            return
        if start in self._ends:  # extends an interval that ends where this one starts
            start = self._ends.pop(start)
        if end in self._starts:  # and joins the one that starts where this one ends
            nxt = self._starts.pop(end)
            del self._ends[nxt]
            end = nxt
        self._starts[start] = end
        self._ends[end] = start


__all__ = ["READ_BACK", "InOrderHash", "ReadBack"]
