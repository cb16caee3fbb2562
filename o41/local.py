"""The files of a checkpoint on this machine: what to upload, named as the version names them.

A step can be saved from a directory, single files, an iterable of paths, or a mapping of
version-relative names to paths or bytes; each becomes a ``LocalFile`` with its size and
sha256: ``Run.save`` hashes each file while it is sent (``o41.transport.transfer.upload_hashed``),
``hash_files`` in a pass of its own for callers that declare the hashes first.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from o41.errors import ConfigError

WORKERS = 8

Source = str | os.PathLike[str] | Mapping[str, Any] | Iterable[str | os.PathLike[str]]


@dataclass(frozen=True)
class LocalFile:
    """A file to upload: its version-relative name and either a path or in-memory bytes
    (``bytes`` or a read-only view)."""

    name: str
    size: int
    sha256: str
    path: Path | None = None
    data: bytes | memoryview | None = None

    def declaration(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


def check_name(name: str) -> str:
    """Reject names the contract refuses (VER-1) before asking the server."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"file name {name!r} is not a relative path of plain segments")
    return name


def collect(source: Source) -> list[tuple[str, Path | bytes]]:
    """Turn what a trainer passes to ``save`` into ``(name, path-or-bytes)`` pairs.

    A directory gives every file under it (names relative, ``/``-separated); a file gives its
    base name; a mapping gives ``name -> path or bytes``; an iterable of paths gives base names.
    """
    if isinstance(source, Mapping):
        pairs = [(str(k), v if isinstance(v, bytes) else Path(v)) for k, v in source.items()]
    elif isinstance(source, (str, os.PathLike)):
        root = Path(source)
        if root.is_dir():
            pairs = [(p.relative_to(root).as_posix(), p)
                     for p in sorted(root.rglob("*")) if p.is_file()]
        elif root.is_file():
            pairs = [(root.name, root)]
        else:
            raise ConfigError(f"{root} is neither a file nor a directory")
    else:
        pairs = [(Path(p).name, Path(p)) for p in source]
    names = [check_name(n) for n, _ in pairs]
    if not pairs:
        raise ConfigError("nothing to save: no files given")
    if len(set(names)) != len(names):
        raise ConfigError(f"duplicate file names in {names}")
    for name, value in pairs:
        if isinstance(value, Path) and not value.is_file():
            raise ConfigError(f"{name}: {value} is not a file")
    return pairs


def hash_files(pairs: list[tuple[str, Path | bytes]], workers: int = WORKERS) -> list[LocalFile]:
    """Size and sha256 of each file, hashed in parallel (hashlib releases the GIL)."""
    def one(pair: tuple[str, Path | bytes]) -> LocalFile:
        name, value = pair
        if isinstance(value, bytes):
            return LocalFile(name, len(value), hashlib.sha256(value).hexdigest(), data=value)
        with value.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        return LocalFile(name, value.stat().st_size, digest, path=value)

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(pairs)))) as pool:
        return list(pool.map(one, pairs))


__all__ = ["WORKERS", "LocalFile", "Source", "check_name", "collect", "hash_files"]
