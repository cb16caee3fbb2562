"""A read of one file of a committed version: each byte fetched once, the whole file checked.

Readers such as torch DCP seek back and forth: ``torch.load`` of one saved tensor reads its
header, then the end of its record, then the header again, then the data. A read-ahead
cache refetches on every backward seek (a DCP load read 1.45x-2.9x the checkpoint). Here
the file is cut into aligned blocks of ``blocksize``: a read asks, in one parallel batch of
exact ranged GETs, for the blocks it needs that are not held. A block the read covers
whole goes straight into the caller's buffer; a block it covers in part (the edge of a
read, where the next read will likely look) is kept, up to ``CACHE_BYTES``, least
recently used first out. A load that reads every byte of a file once fetches each byte
once.

A reader that moves forward through the file (DCP, ``torch.load``) is read ahead in runs of
blocks, one GET per run, with a window that doubles while the reads keep landing in what
was read ahead, up to ``MAX_AHEAD`` bytes: a 256 MiB shard is a handful of large GETs, not
fifty small ones, each of which costs the server more than a MiB of ``sendfile`` does. A
reader that stops has been sent at most the window it had earned.

Each run is received into a buffer of a process-wide spare list (``_Slab``): a fresh 16 MiB
buffer costs a page fault per 4 KiB on its first fill, more than receiving into it, and a
new one is mapped whole in one call (``o41.transport.buffers``). A run's
buffer goes back to the list once none of its blocks is held, waiting to be read, or
waiting for the hash; a buffer whose blocks are not all accounted for (a file collected
unclosed) is simply left to the collector.

The sha256 of the file is computed as blocks arrive, in order, on a helper thread while the
reader's caller works on the bytes (a block that arrives early
is held until the hash reaches it, up to ``PENDING_BYTES``); once it has covered the file,
a mismatch raises ``IntegrityError`` from that read and from every later one.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol

from fsspec.spec import AbstractBufferedFile

from o41.errors import IntegrityError, TransportError
from o41.models import FileEntry, Version
from o41.transport.buffers import Buffer, zeroed
from o41.transport.memread import check_sha256, fill, shared_pool

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

CACHE_BYTES = 64 * 1024 * 1024     # edge blocks kept once hashed
PENDING_BYTES = 256 * 1024 * 1024  # blocks kept only because the hash has not reached them
MAX_AHEAD = 64 * 1024 * 1024  # bytes read ahead of a reader that keeps moving forward
RUN = 16 * 1024 * 1024  # read ahead in GETs of up to this many bytes (at least one block)
SPARE_BYTES = 64 * 1024 * 1024  # run buffers kept for the process's next runs, at most


class _Slab:
    """The buffer of one read-ahead run, shared by its blocks. ``refs`` counts the block
    references that are alive: waiting to be read, held in a file's cache, or queued for
    the hash; at zero the buffer goes back to the spare list."""

    __slots__ = ("buf", "refs")
    _spare: list[Buffer] = []
    _lock = threading.Lock()

    def __init__(self, size: int, refs: int) -> None:
        self.refs = refs
        with self._lock:
            found = next((i for i, b in enumerate(self._spare) if len(b) >= size), None)
            buf = self._spare.pop(found) if found is not None else None
        self.buf = buf if buf is not None else zeroed(max(size, RUN))

    def hold(self) -> None:
        with self._lock:
            self.refs += 1

    def release(self, count: int = 1) -> None:
        with self._lock:
            self.refs -= count
            if self.refs == 0 and (sum(map(len, self._spare)) + len(self.buf)
                                   <= SPARE_BYTES):
                self._spare.append(self.buf)


def _release_ahead(future: Future[tuple[_Slab, memoryview]]) -> None:
    """A read-ahead block nobody will read: its reference to its run's buffer ends."""
    if not future.cancelled() and future.exception() is None:
        future.result()[0].release()


class ReadingHost(Protocol):
    """What a read file asks of its filesystem: how many GETs at once, and a fresh
    signature of its version when the URLs it holds expired."""

    workers: int

    def signed(self, artifact: str, version: str, fresh: bool = False) -> Version: ...


class ReadFile(AbstractBufferedFile):
    """An fsspec read file over aligned blocks, each fetched at most once while held."""

    DEFAULT_BLOCK_SIZE = 8 * 1024 * 1024  # fsspec's 5 MiB makes more, smaller GETs

    def __init__(self, fs: ReadingHost, path: str, version: Version, entry: FileEntry,
                 **kwargs: object) -> None:
        self.version, self.entry = version, entry
        kwargs["cache_type"] = "none"  # the blocks below are the cache
        kwargs.pop("cache_options", None)
        super().__init__(fs, path, mode="rb", size=entry.size, **kwargs)
        self._blocks: OrderedDict[int, memoryview] = OrderedDict()
        self._slabs: dict[int, _Slab] = {}  # the run buffer a held block lies in
        self._held = 0
        self._sha: _BackgroundHash | None = _BackgroundHash() if entry.sha256 else None
        self._hashed = 0  # bytes [0, _hashed) are in the running sha256
        self._bad: IntegrityError | None = None
        self._mutex = threading.Lock()
        # blocks asked for ahead of reads: the run's future and the block's offset in it
        self._ahead: dict[int, tuple[Future[tuple[_Slab, memoryview]], int]] = {}
        self._far = 0  # the furthest byte read so far: reads moving past it read ahead
        self._window = 2  # blocks to hold ahead of the furthest read; doubles on each hit

    # -- the file interface -------------------------------------------------------------

    def read(self, length: int = -1) -> bytes:
        length = -1 if length is None else int(length)
        self._check_readable()
        left = max(0, self.size - self.loc)
        length = left if length < 0 else min(length, left)
        if length == 0:
            return b""
        buf = bytearray(length)
        self._fill(self.loc, memoryview(buf))
        self.loc += length
        return bytes(buf)

    def readinto(self, b: WriteableBuffer) -> int:
        """Receive straight into ``b`` (torch reads a tensor's data this way)."""
        self._check_readable()
        view = memoryview(b).cast("B")
        n = min(len(view), max(0, self.size - self.loc))
        if n == 0:
            return 0
        self._fill(self.loc, view[:n])
        self.loc += n
        return n

    def close(self) -> None:
        super().close()
        if self._sha is not None:
            self._sha.stop()
        for ahead, _ in self._ahead.values():
            if not ahead.cancel():
                ahead.add_done_callback(_release_ahead)
        self._ahead.clear()
        for index in list(self._blocks):
            self._drop(index)

    def _check_readable(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if self._bad is not None:
            raise self._bad

    def _fetch_range(self, start: int, end: int) -> bytes:
        """fsspec's hook (used by its generic paths): the same blocks as ``read``."""
        end = min(end, self.size)
        if end <= start:
            return b""
        buf = bytearray(end - start)
        self._fill(start, memoryview(buf))
        return bytes(buf)

    # -- blocks -------------------------------------------------------------------------

    def _fill(self, pos: int, view: memoryview) -> None:
        with self._mutex:
            self._fill_locked(pos, view)
        if self._bad is not None:
            raise self._bad

    def _fill_locked(self, pos: int, view: memoryview) -> None:
        size, bs = self.size, self.blocksize
        end = pos + len(view)
        first, last = pos // bs, (end - 1) // bs
        fresh: dict[int, memoryview] = {}          # blocks new to the cache: landed, fetched
        slabs: dict[int, _Slab] = {}               # the run buffers landed blocks lie in
        hit = False
        for index in range(first, last + 1):
            ahead = self._ahead.pop(index, None)
            if ahead is not None:
                future, at = ahead
                try:
                    slab, run = future.result()
                except Exception:  # asked again below, with retries and re-signing
                    continue
                fresh[index] = run[at:at + min(bs, size - index * bs)]
                slabs[index] = slab  # its reference moves to the cache below
                hit = True
        if hit:
            self._window = min(2 * self._window, max(1, MAX_AHEAD // bs))
        fetch: list[tuple[int, memoryview]] = []
        direct: dict[int, memoryview] = {}         # whole blocks received into ``view``
        run: tuple[int, int] | None = None         # adjacent direct blocks: one GET
        for index in range(first, last + 1):
            lo, hi = index * bs, min(size, (index + 1) * bs)
            held = index in fresh or index in self._blocks
            if pos <= lo and hi <= end and not held:
                direct[index] = view[lo - pos:hi - pos]
                run = (run[0] if run else lo, hi)
                continue
            if run:
                fetch.append((run[0], view[run[0] - pos:run[1] - pos]))
                run = None
            if not held:  # an edge block: kept, the next read likely looks here
                fresh[index] = memoryview(zeroed(hi - lo))
                fetch.append((lo, fresh[index]))
        if run:
            fetch.append((run[0], view[run[0] - pos:run[1] - pos]))
        if fetch:
            self._get(fetch)
        for index in range(first, last + 1):
            lo = index * bs
            block = fresh.get(index)
            if block is None and index in self._blocks:
                block = self._blocks[index]
                self._blocks.move_to_end(index)
            if block is not None:  # copied before any block is let go to make room
                a, b = max(pos, lo), min(end, lo + len(block))
                view[a - pos:b - pos] = block[a - lo:b - lo]
        for index, block in fresh.items():
            self._keep(index, block, slabs.get(index))
        self._advance_hash(direct)
        if end > self._far:
            self._far = end
            self._read_ahead(last + 1)

    def _read_ahead(self, start: int) -> None:
        """Keep ``_window`` blocks from ``start`` on asked for or held, while the caller
        works on this read's bytes (torch deserializes a record while the next arrives).
        Asked for only once half the window is missing, so the GETs stay large."""
        bs = self.blocksize
        stop = min(start + self._window, -(-self.size // bs))
        missing = [i for i in range(start, stop) if i not in self._blocks and i not in self._ahead]
        if not missing or len(missing) * 2 < stop - start and stop * bs < self.size:
            return
        pool = shared_pool()
        per_run = max(1, RUN // bs)
        runs: list[list[int]] = []
        for index in missing:
            if runs and runs[-1][-1] == index - 1 and len(runs[-1]) < per_run:
                runs[-1].append(index)
            else:
                runs.append([index])
        for run in runs:
            future = pool.submit(self._fetch_run, run[0], run[-1] + 1)
            for index in run:
                self._ahead[index] = (future, (index - run[0]) * bs)

    def _fetch_run(self, first: int, stop: int) -> tuple[_Slab, memoryview]:
        """Blocks ``[first, stop)`` in one run buffer, by one GET (a pool thread's); the
        buffer counts one reference per block."""
        lo = first * self.blocksize
        n = min(self.size, stop * self.blocksize) - lo
        slab = _Slab(n, refs=stop - first)
        run = memoryview(slab.buf)[:n]
        try:
            fill(self.entry, [(lo, run)], workers=1)
        except BaseException:
            slab.release(stop - first)  # nothing else saw it
            raise
        return slab, run

    def _get(self, segments: list[tuple[int, memoryview]]) -> None:
        try:
            fill(self.entry, segments, workers=self.fs.workers)
            return
        except TransportError as exc:
            if exc.status != 403:  # expired URL: sign again, once
                raise
        found = self.fs.signed(self.version.artifact or "", self.version.version, fresh=True)
        self.entry = next(e for e in found.files if e.name == self.entry.name)
        fill(self.entry, segments, workers=self.fs.workers)

    def _keep(self, index: int, block: memoryview, slab: _Slab | None = None) -> None:
        if index in self._blocks:
            self._drop(index)
        self._blocks[index] = block
        if slab is not None:
            self._slabs[index] = slab
        self._held += len(block)
        # Hashed blocks go first, least recently used first; a block the hash still needs
        # goes only past PENDING_BYTES, and then the file cannot be checked whole.
        over = self._held - CACHE_BYTES
        for old in list(self._blocks):
            if over <= 0:
                break
            if old != index and self._hashed_past(old):
                over -= len(self._blocks[old])
                self._drop(old)
        if self._held > PENDING_BYTES + CACHE_BYTES and self._sha is not None:
            self._sha.stop()
            self._sha = None
            while self._held > CACHE_BYTES and len(self._blocks) > 1:
                self._drop(next(iter(self._blocks)))

    def _hashed_past(self, index: int) -> bool:
        """The block is no longer needed by the running sha256."""
        return self._sha is None or min(self.size, (index + 1) * self.blocksize) <= self._hashed

    def _drop(self, index: int) -> None:
        self._held -= len(self._blocks.pop(index))
        slab = self._slabs.pop(index, None)
        if slab is not None:
            slab.release()

    def _advance_hash(self, direct: dict[int, memoryview]) -> None:
        """Hash every block now at hand from the hash frontier on; check at the end."""
        if self._sha is None:
            return
        bs = self.blocksize
        while self._hashed < self.size:
            index = self._hashed // bs
            block = direct.get(index)
            if block is not None:
                # a block of the caller's buffer is copied: the caller may change it once back
                self._sha.update(bytes(block), None)
            elif (block := self._blocks.get(index)) is not None:
                slab = self._slabs.get(index)
                if slab is not None:
                    slab.hold()  # the hash's own reference: its buffer stays until hashed
                self._sha.update(block, slab)
            else:
                break
            self._hashed += len(block)
        for index, block in direct.items():  # received early: held until the hash is here
            if index * bs >= self._hashed:
                self._keep(index, memoryview(bytearray(block)))
        if self._hashed >= self.size and self._sha is not None:
            digest, self._sha = self._sha.hexdigest(), None
            try:
                check_sha256(self.entry, digest, self.size)
            except IntegrityError as exc:
                self._bad = exc


class _BackgroundHash:
    """A sha256 updated on its own thread, in the order blocks are given, so the reader's
    thread goes back to its caller (torch deserializing) while the hash catches up."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.queue: queue.SimpleQueue[tuple[memoryview | bytes, _Slab | None] | None] = (
            queue.SimpleQueue())
        self.thread: threading.Thread | None = None

    def update(self, data: memoryview | bytes, slab: _Slab | None) -> None:
        """Hash ``data`` after what was given before; ``slab``'s reference ends once it is."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="o41-read-sha256",
                                           daemon=True)
            self.thread.start()
        self.queue.put((data, slab))

    def hexdigest(self) -> str:
        """The digest of everything given, once hashed."""
        self.stop()
        if self.thread is not None:
            self.thread.join()
        return self.sha.hexdigest()

    def stop(self) -> None:
        self.queue.put(None)

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            data, slab = item
            self.sha.update(data)
            del data, item
            if slab is not None:
                slab.release()


__all__ = ["CACHE_BYTES", "PENDING_BYTES", "ReadFile"]
