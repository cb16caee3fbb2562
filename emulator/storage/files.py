"""The embedded default backend: each bucket is a folder under the data directory."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import BinaryIO

from .base import ObjectMissing, Storage


class FileStorage(Storage):
    def __init__(self, root: Path, chunk_size: int = 1 << 20) -> None:
        self.root = root
        self.chunk_size = chunk_size
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, bucket: str, key: str) -> Path:
        base = (self.root / bucket).resolve()
        path = (base / key).resolve()
        # Keys are validated upstream; this guard keeps a bug from ever escaping the bucket.
        if base not in path.parents:
            raise ObjectMissing(key)
        return path

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

    def reclaim_partials(self, buckets: Collection[str], older_than: float) -> int:
        """Partial files of every bucket share one folder; its stale ones are removed
        (by modification time, which every write moves on)."""
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
