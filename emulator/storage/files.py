"""The embedded default backend: each bucket is a folder under the data directory."""

from __future__ import annotations

import io
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import BinaryIO

from .base import ObjectMissing, Storage


class FileStorage(Storage):
    empties_whole_buckets = True

    def __init__(self, root: Path, chunk_size: int = 1 << 20) -> None:
        self.root = root
        self.chunk_size = chunk_size
        self.root.mkdir(parents=True, exist_ok=True)
        self._real_root = os.path.realpath(root)

    def _path(self, bucket: str, key: str) -> Path:
        # Keys are validated upstream; this guard keeps a bug (a ".." in a key) from ever
        # escaping the bucket. Checked on the words of the path, not by resolving it: a
        # realpath() lstat()s every folder of a key, twice per GET, and the emulator makes
        # no links inside its buckets.
        base = os.path.join(self._real_root, bucket)
        path = os.path.normpath(os.path.join(base, key))
        if not path.startswith(base + os.sep):
            raise ObjectMissing(key)
        return Path(path)

    def ensure_bucket(self, bucket: str) -> None:
        (self.root / bucket).mkdir(parents=True, exist_ok=True)
        (self.root / ".partial").mkdir(parents=True, exist_ok=True)

    def put(self, bucket: str, key: str, stream: BinaryIO) -> None:
        target = self._path(bucket, key)
        # Partial files live outside the buckets, so a crash mid-upload leaves no object behind.
        fd, tmp = tempfile.mkstemp(dir=self.root / ".partial")
        try:
            readinto = _readinto(stream)
            if readinto is None:
                while chunk := stream.read(self.chunk_size):
                    _write_all(fd, chunk)
            else:
                # Two reused buffers in turn: no per-chunk allocation, and the reader may
                # still be hashing one while the other is received.
                bufs = [memoryview(bytearray(self.chunk_size)) for _ in range(2)]
                turn = 0
                while n := readinto(bufs[turn]):
                    _write_all(fd, bufs[turn][:n])
                    turn ^= 1
            os.close(fd)
            fd = -1
            _move_into_place(tmp, target)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            os.unlink(tmp)
            raise

    def size(self, bucket: str, key: str) -> int:
        try:
            return self._path(bucket, key).stat().st_size
        except FileNotFoundError:
            raise ObjectMissing(key) from None

    def open_file(self, bucket: str, key: str) -> BinaryIO:
        """The object's file, unbuffered, so a server can sendfile() a range of it."""
        try:
            return open(self._path(bucket, key), "rb", buffering=0)
        except FileNotFoundError:
            raise ObjectMissing(key) from None

    def read(self, bucket: str, key: str, start: int, length: int) -> Iterator[bytes]:
        try:
            fh = open(self._path(bucket, key), "rb")
        except FileNotFoundError:
            raise ObjectMissing(key) from None
        with fh:
            fh.seek(start)
            remaining = length
            while remaining > 0:
                chunk = fh.read(min(self.chunk_size, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
                yield chunk

    def delete(self, bucket: str, key: str) -> None:
        try:
            self._path(bucket, key).unlink()
        except (FileNotFoundError, ObjectMissing):
            pass

    def delete_prefix(self, bucket: str, prefix: str) -> None:
        shutil.rmtree(self._path(bucket, prefix.rstrip("/")), ignore_errors=True)

    def delete_uploads(self, prefixes: Collection[tuple[str, str]],
                       buckets: Collection[str]) -> None:
        """Empty the buckets whole: each is renamed into the trash folder and made anew,
        and the trash is removed by a thread of its own. Unlinking is slow (thousands of
        uploads took seconds, on a busy disk far more), a rename is one step per bucket.

        Every object in these folders is one of this deployment's uploads, or bytes a
        killed process left of one: the data dir is one deployment's, unlike an S3 bucket
        that several may share."""
        trash = self.root / TRASH
        trash.mkdir(parents=True, exist_ok=True)
        for bucket in buckets:
            try:
                os.rename(self.root / bucket, trash / f"{bucket}.{secrets.token_hex(6)}")
            except FileNotFoundError:  # never written to, or another node's reset took it
                pass
            self.ensure_bucket(bucket)
        self.empty_trash()

    def empty_trash(self) -> None:
        """Remove what resets moved aside, in a daemon thread (one at a time per process):
        what a stop cuts short is removed by the next start's."""
        with _SWEEPING:
            if self.root in _SWEEPERS:
                _SWEEPERS[self.root].again = True
                return
            sweeper = _Sweeper(self.root / TRASH)
            _SWEEPERS[self.root] = sweeper
        sweeper.start()

    def reclaim_partials(self, buckets: Collection[str], older_than: float) -> int:
        """Partial files of every bucket share one folder; its stale ones are removed
        (by modification time, which every write moves on). Emptying the trash of resets
        starts here too."""
        if (self.root / TRASH).is_dir():
            self.empty_trash()
        cutoff = time.time() - older_than
        removed = 0
        (self.root / ".partial").mkdir(parents=True, exist_ok=True)
        for entry in os.scandir(self.root / ".partial"):
            try:
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:  # its PUT finished or failed meanwhile
                pass
        return removed


TRASH = ".trash"  # the buckets resets moved aside, being removed
_SWEEPERS: dict[Path, _Sweeper] = {}
_SWEEPING = threading.Lock()


def _forget_sweepers_in_child() -> None:
    """A forked process (a gunicorn worker of the master that started a sweep) has none of
    its parent's threads, and may have taken the lock while one of them held it."""
    global _SWEEPING
    _SWEEPING = threading.Lock()
    _SWEEPERS.clear()


os.register_at_fork(after_in_child=_forget_sweepers_in_child)


class _Sweeper(threading.Thread):
    """Removes everything in one trash folder, again while resets keep adding to it."""

    def __init__(self, trash: Path) -> None:
        super().__init__(name=f"o41-trash {trash}", daemon=True)
        self.trash = trash
        self.again = True

    def run(self) -> None:
        try:
            while True:
                with _SWEEPING:
                    if not self.again:
                        return
                    self.again = False
                for entry in _entries(self.trash):
                    shutil.rmtree(entry, ignore_errors=True)
        finally:
            with _SWEEPING:
                _SWEEPERS.pop(self.trash.parent, None)


def _entries(folder: Path) -> list[str]:
    try:
        return [e.path for e in os.scandir(folder)]
    except FileNotFoundError:  # the data dir itself was removed (a temporary one at exit)
        return []


def _move_into_place(tmp: str, target: Path) -> None:
    """Rename a finished file to its key, making its folders first (and again, should a
    reclaim of the same upload remove them in between)."""
    for _ in range(10):
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(tmp, target)
            return
        except FileNotFoundError:
            if not os.path.exists(tmp):
                raise
    raise OSError(f"could not create the folders of {target}")


def _readinto(stream: BinaryIO) -> Callable[[memoryview], int] | None:
    """The stream's own readinto(), if it has one (io.RawIOBase's placeholder is not)."""
    method = getattr(type(stream), "readinto", None)
    if method is None or method is io.RawIOBase.readinto:
        return None
    return stream.readinto


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
