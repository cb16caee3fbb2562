"""Where the bytes of a file written through ``o41://`` go: memory, or disk past a budget.

Staging to disk then hashing then uploading read every byte three times (write, hash,
send), and the writer's own ``fsync`` (torch DCP syncs every file it writes) waited on the
disk. Here a written file lives in an anonymous memory file (``memfd``) while the process's
staging budget (``MEMORY_BUDGET``) lasts: it has a real file descriptor, so ``fileno`` and
``fsync`` work (and cost nothing), and on close it is mapped read-only and uploaded from
that memory, with no copy. A file that would pass the budget moves to its staged path on
disk (``dup2`` onto the same descriptor, so the writer never notices) and goes on there.
Either way the sha256 is computed as the bytes are written; a writer that seeks back and
overwrites makes it fall back to hashing the finished file once.

What the commit needs is ``StagedPath.staged``: the file's ``LocalFile`` (name, size,
sha256 and the memory or the path to send), so a commit hashes nothing again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import mmap
import os
import threading
import weakref
from pathlib import Path, PosixPath
from typing import Any

from .local import WORKERS, LocalFile, hash_files

MEMORY_BUDGET = 2 * 1024 * 1024 * 1024  # bytes of staged files held in memory, per process
RESERVE_STEP = 1024 * 1024  # the budget is taken a MiB at a time
BUFFER = 1024 * 1024
HASH_STEP = 4 * 1024 * 1024  # files past this are hashed on a helper thread as written


class _Budget:
    """Bytes of memory staging left in this process."""

    def __init__(self) -> None:
        self.used = 0
        self.lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self.lock:
            if self.used + n > MEMORY_BUDGET:
                return False
            self.used += n
            return True

    def give(self, n: int) -> None:
        with self.lock:
            self.used = max(0, self.used - n)


BUDGET = _Budget()


class StagedPath(PosixPath):
    """A staged file's path that also carries what the commit needs (``staged``).

    A file staged in memory has its bytes in ``staged.data``; its path stays empty.
    """

    staged: LocalFile | None = None


class _Hasher:
    """sha256 of a staged file, read back from its descriptor on a helper thread while the
    writer goes on: the writer's thread serializes, this one hashes (hashlib and ``preadv``
    release the GIL). Only bytes the writer has handed to the descriptor are read."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.sha = hashlib.sha256()
        self.hashed = 0
        self.target = 0
        self.stopped = False
        self.error: BaseException | None = None
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="o41-stage-sha256", daemon=True)
        self.thread.start()

    def advance(self, upto: int) -> None:
        with self.cond:
            if upto > self.target:
                self.target = upto
                self.cond.notify()

    def finish(self, size: int) -> str | None:
        """The digest of bytes ``[0, size)``, once hashed; None when it could not be."""
        self.advance(size)
        with self.cond:
            while self.hashed < size and self.error is None and not self.stopped:
                self.cond.wait()
        self.stop()
        return self.sha.hexdigest() if self.hashed == size and self.error is None else None

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        if self.thread is not threading.current_thread():
            self.thread.join()

    def _run(self) -> None:
        buf = memoryview(bytearray(HASH_STEP))
        try:
            while True:
                with self.cond:
                    while self.hashed >= self.target and not self.stopped:
                        self.cond.wait()
                    if self.stopped:
                        return
                    want = min(HASH_STEP, self.target - self.hashed)
                n = os.preadv(self.fd, [buf[:want]], self.hashed)
                if n <= 0:
                    raise OSError(f"staged file ended at byte {self.hashed} of {self.target}")
                self.sha.update(buf[:n])
                with self.cond:
                    self.hashed += n
                    self.cond.notify_all()
        except BaseException as exc:  # noted: the file is then hashed whole at close
            with self.cond:
                self.error = exc
                self.cond.notify_all()


class StagingWriter(io.BufferedWriter):
    """A buffered writer into memory (a ``memfd``) or ``local``, hashing what it writes."""

    def __init__(self, local: Path) -> None:
        self._reserved = 0
        fd = -1
        if hasattr(os, "memfd_create") and BUDGET.take(RESERVE_STEP):
            self._reserved = RESERVE_STEP
            fd = os.memfd_create("o41-stage", os.MFD_CLOEXEC)
        self.in_memory = fd >= 0
        raw = io.FileIO(fd, "w", closefd=True) if self.in_memory else io.FileIO(local, "w+")
        super().__init__(raw, buffer_size=BUFFER)
        self.local = local
        self._size = 0  # bytes written so far (the end, while nobody seeks back)
        self._in_order = True  # False once a seek may have overwritten written bytes
        self._hasher: _Hasher | None = None
        self._told = 0  # bytes written when the hasher was last told how far to go

    # -- writing ------------------------------------------------------------------------

    def write(self, b: Any) -> int:
        n = len(b) if isinstance(b, bytes) else memoryview(b).nbytes
        if self.in_memory and self._size + n > self._reserved:
            self._grow(self._size + n)
        written = super().write(b)
        self._size += written
        if self._in_order and self._size - self._told >= HASH_STEP:  # wake it rarely
            if self._hasher is None:
                self._hasher = _Hasher(self.raw.fileno())
            self._told = self._size
            self._hasher.advance(os.lseek(self.raw.fileno(), 0, os.SEEK_CUR))
        return written

    def seek(self, pos: int, whence: int = 0) -> int:
        at = super().seek(pos, whence)
        if at != self._size:  # bytes may be overwritten: hash the finished file instead
            self._out_of_order()
        return at

    def truncate(self, pos: int | None = None) -> int:
        self._out_of_order()
        return super().truncate(pos)

    def _out_of_order(self) -> None:
        self._in_order = False
        if self._hasher is not None:
            self._hasher.stop()
            self._hasher = None
    def _grow(self, need: int) -> None:
        more = max(RESERVE_STEP, need - self._reserved)
        if BUDGET.take(more):
            self._reserved += more
        else:
            self._spill()

    def _spill(self) -> None:
        """Move the bytes so far to ``local`` on disk, under the same descriptor."""
        self.flush()
        fd = self.raw.fileno()
        at = os.lseek(fd, 0, os.SEEK_CUR)
        end = os.fstat(fd).st_size
        disk = os.open(self.local, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            sent = 0
            while sent < end:
                n = os.sendfile(disk, fd, sent, end - sent)
                if n <= 0:
                    raise OSError(f"staging {self.local}: copy stopped at byte {sent} of {end}")
                sent += n
            os.dup2(disk, fd)  # the writer's descriptor now names the disk file
        finally:
            os.close(disk)
        os.lseek(fd, at, os.SEEK_SET)
        self.in_memory = False
        BUDGET.give(self._reserved)
        self._reserved = 0

    # -- ending -------------------------------------------------------------------------

    def finish(self, name: str) -> StagedPath:
        """Close the file; its path, carrying the ``LocalFile`` the commit uploads."""
        self.flush()
        fd = self.raw.fileno()
        size = os.fstat(fd).st_size
        digest = None
        if self._hasher is not None:
            digest = self._hasher.finish(size) if size == self._size else None
            self._hasher.stop()
            self._hasher = None
        data: memoryview | None = None
        if self.in_memory:
            data = memoryview(b"")
            if size:
                mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ)
                weakref.finalize(mapped, BUDGET.give, self._reserved)
                self._reserved = 0
                data = memoryview(mapped)
        if digest is None:  # small, or written out of order: hash it whole, once
            if data is not None:
                digest = hashlib.sha256(data).hexdigest()
            else:
                os.lseek(fd, 0, os.SEEK_SET)
                with open(fd, "rb", closefd=False) as f:
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
        super().close()
        self._release()
        path = StagedPath(self.local)
        path.staged = LocalFile(name, size, digest, path=None if data is not None else path,
                                data=data)
        return path

    def drop(self) -> None:
        """Forget the bytes (memory or disk)."""
        if self._hasher is not None:
            self._hasher.stop()
            self._hasher = None
        if not self.closed:
            super().close()
        self._release()
        self.local.unlink(missing_ok=True)

    def _release(self) -> None:
        BUDGET.give(self._reserved)
        self._reserved = 0


def staged_files(pairs: list[tuple[str, Path]], workers: int = WORKERS) -> list[LocalFile]:
    """The ``LocalFile`` of each staged file: precomputed when written through ``open``,
    hashed now when staged by reference (``put``); named as the step names them now."""
    out: dict[str, LocalFile] = {}
    todo: list[tuple[str, Path | bytes]] = []
    for name, path in pairs:
        staged = getattr(path, "staged", None)
        if staged is None:
            todo.append((name, path))
        else:
            out[name] = dataclasses.replace(staged, name=name)  # a rename keeps its bytes
    for f in hash_files(todo, workers) if todo else []:
        out[f.name] = f
    return [out[name] for name, _ in pairs]


__all__ = ["BUDGET", "MEMORY_BUDGET", "StagedPath", "StagingWriter", "staged_files"]
