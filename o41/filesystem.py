"""``o41://`` as an fsspec filesystem: the only change a trainer makes is the location string.

Registered through the ``fsspec.specs`` entry point, so ``fsspec.open("o41://...")`` and
every library that takes an fsspec URL find it. Paths::

    o41://P/N                         the artifact: lists its versions
    o41://P/N/step-00000100/<file>    a file of a committed version
    o41://P/N/latest/<file>           the same of the latest committed version

Configured like the client, from the environment (``O41_ARTIFACTS_API_URL``,
``O41_ARTIFACTS_API_KEY``, ``SKYPILOT_CLUSTER_INFO`` or ``O41_PLACE``), or by storage options
``api_url``, ``api_key``, ``place``. Writing opens the artifact once per filesystem instance
(``resume="latest"`` by default; ``resume=None`` for fresh, or ``"o41://P/N/step-…"`` to
fork); reading never opens, so a reader never fences a trainer. How writes commit: see
``o41.fsstage``.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fsspec.spec import AbstractFileSystem
from fsspec.utils import isfilelike

from .api import ApiClient
from .checkpoint import Run
from .config import Place, Settings
from .errors import ConfigError, NotFound, TransportError
from .fsread import ReadFile
from .fsstage import (
    DEFAULT_MARKERS,
    Staging,
    StepKey,
    StepTransaction,
    WriteFile,
    warn_uncommitted,
)
from .fswrite import StepWriter
from .location import VERSION_RE, Location
from .memread import read_range
from .models import FileEntry, Version
from .transfer import WORKERS, download

SIGNED_FOR = 60.0  # at most this many seconds a signed listing is reused


class O41FileSystem(StepWriter, AbstractFileSystem):
    """Checkpoint versions of o41 artifacts as directories of immutable files."""

    protocol = "o41"
    root_marker = ""
    blocksize = 8 * 1024 * 1024
    transaction_type = StepTransaction

    def __init__(self, api_url: str | None = None, api_key: str | None = None,
                 place: str | None = None, resume: str | None = "latest",
                 markers: tuple[str, ...] | list[str] = DEFAULT_MARKERS,
                 workers: int = WORKERS, staging_dir: str | None = None,
                 holder: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        env = dict(os.environ)
        env.update({k: v for k, v in (("O41_ARTIFACTS_API_URL", api_url),
                                      ("O41_ARTIFACTS_API_KEY", api_key)) if v})
        settings = Settings.from_env(env)
        self.settings = settings
        self.place = Place.parse(place) if place else settings.place
        self.holder = holder or settings.holder
        self.resume = None if resume in (None, "fresh") else resume
        self.markers = tuple(markers)
        self.workers = workers
        self.api = ApiClient.from_settings(settings)
        self._runs: dict[str, Run] = {}
        self._signed_cache: dict[StepKey, tuple[float, Version]] = {}
        self._lock = threading.RLock()
        self._local = threading.local()
        self._staging = Staging(staging_dir)
        weakref.finalize(self, warn_uncommitted, self._staging)

    # -- paths ------------------------------------------------------------------------------

    def _split(self, path: str) -> tuple[str, str | None, str]:
        """``(artifact, version or None, name within the version)``; bad shapes raise."""
        parts = [p for p in self._strip_protocol(path).split("/") if p]
        if len(parts) < 2:
            raise FileNotFoundError(f"o41://{'/'.join(parts)}: not an artifact "
                                    "(o41://project/name)")
        artifact = Location.parse(f"o41://{parts[0]}/{parts[1]}").artifact
        if len(parts) == 2:
            return artifact, None, ""
        version = parts[2]
        if version != "latest" and not VERSION_RE.match(version):
            raise FileNotFoundError(f"o41://{'/'.join(parts)}: {version!r} is not 'latest' "
                                    "or a version step- and 8 digits")
        return artifact, version, "/".join(parts[3:])

    def _write_target(self, path: str) -> tuple[StepKey, str]:
        artifact, version, name = self._split(path)
        if version is None or version == "latest" or not name:
            raise ConfigError(f"{path}: files are written into a version, "
                              "o41://project/name/step-XXXXXXXX/<file>")
        return (artifact, version), name

    # -- reading ----------------------------------------------------------------------------

    def _signed(self, artifact: str, version: str, fresh: bool = False) -> Version:
        """The version with signed URLs; ``latest`` is resolved anew on every call."""
        key = (artifact, version)
        now = time.monotonic()
        if version != "latest" and not fresh:
            with self._lock:
                hit = self._signed_cache.get(key)
            if hit and now < hit[0]:
                return hit[1]
        try:
            data = self.api.read_version(artifact, version, urls=True, place=self.place)
        except NotFound as exc:
            raise FileNotFoundError(f"o41://{artifact}/{version}: {exc.message}") from None
        found = Version.from_json(data)
        with self._lock:
            self._signed_cache[(artifact, found.version)] = (now + _reuse_for(found), found)
        return found

    def _entry(self, path: str) -> tuple[Version, FileEntry]:
        artifact, version, name = self._split(path)
        if version is None or not name:
            raise IsADirectoryError(path)
        found = self._signed(artifact, version)
        for entry in found.files:
            if entry.name == name:
                return found, entry
        if any(e.name.startswith(name + "/") for e in found.files):
            raise IsADirectoryError(path)
        raise FileNotFoundError(f"{path}: no such file in {found.version}")

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        artifact, version, name = self._split(path)
        base = self._strip_protocol(path).rstrip("/")
        if version is None:
            try:
                versions = self.api.list_versions(artifact)
            except NotFound:
                raise FileNotFoundError(path) from None
            out: list[dict[str, Any]] = [
                {"name": f"{artifact}/{v['version']}", "type": "directory",
                 "size": int(v.get("size") or 0), "step": v.get("step"),
                 "created_at": v.get("created_at"), "epoch": v.get("epoch")}
                for v in versions]
        else:
            found = self._signed(artifact, version)
            prefix = f"{name}/" if name else ""
            out, dirs = [], set()
            for e in found.files:
                if not e.name.startswith(prefix):
                    if e.name == name:
                        return [self._file_info(base, e)] if detail else [base]
                    continue
                head, sep, _ = e.name[len(prefix):].partition("/")
                if sep:
                    dirs.add(head)
                else:
                    out.append(self._file_info(f"{base}/{head}", e))
            out += [{"name": f"{base}/{d}", "type": "directory", "size": 0}
                    for d in sorted(dirs)]
            if not out and name:
                raise FileNotFoundError(path)
        return out if detail else [o["name"] for o in out]

    @staticmethod
    def _file_info(name: str, e: FileEntry) -> dict[str, Any]:
        return {"name": name, "type": "file", "size": e.size, "sha256": e.sha256}

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        artifact, version, name = self._split(path)
        base = self._strip_protocol(path).rstrip("/")
        if version is None:
            try:
                data = self.api.read_artifact(artifact)
            except NotFound:
                raise FileNotFoundError(path) from None
            return {"name": base, "type": "directory", "size": 0,
                    "latest": data.get("latest")}
        found = self._signed(artifact, version)
        if not name:
            return {"name": base, "type": "directory", "size": found.size,
                    "version": found.version}
        for e in found.files:
            if e.name == name:
                return self._file_info(base, e)
        if any(e.name.startswith(name + "/") for e in found.files):
            return {"name": base, "type": "directory", "size": 0}
        raise FileNotFoundError(path)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None,
                 **kwargs: Any) -> bytes:
        """Bytes of a file by parallel ranged GETs; a whole file is sha256-checked."""
        found, entry = self._entry(path)
        size = entry.size
        lo = 0 if start is None else (start if start >= 0 else max(0, size + start))
        hi = size if end is None else (end if end >= 0 else max(0, size + end))
        try:
            return read_range(entry, lo, hi, workers=self.workers)
        except TransportError as exc:
            if exc.status != 403:
                raise
        # the URL expired since it was signed: sign the same version again, once
        found = self._signed(found.artifact or self._split(path)[0], found.version, fresh=True)
        entry = next(e for e in found.files if e.name == entry.name)
        return read_range(entry, lo, hi, workers=self.workers)

    def _pin(self, path: Any) -> Any:
        """Resolve ``latest`` once, so a multi-file read never mixes two versions."""
        if isinstance(path, (list, tuple)):
            return [self._pin(p) for p in path]
        artifact, version, name = self._split(path)
        if version != "latest":
            return path
        found = self._signed(artifact, "latest")
        tail = f"/{name}" if name else ""
        return f"{artifact}/{found.version}{tail}" + ("/" if str(path).endswith("/") else "")

    def get(self, rpath: Any, lpath: Any, recursive: bool = False, **kwargs: Any) -> None:
        """Download files; every file of the call goes in one parallel, verified download."""
        self._local.get_batch = batch = []
        try:
            super().get(self._pin(rpath), lpath, recursive=recursive, **kwargs)
        finally:
            self._local.get_batch = None
        self._download(batch)

    def get_file(self, rpath: str, lpath: Any, callback: Any = None, outfile: Any = None,
                 **kwargs: Any) -> None:
        if isfilelike(lpath):
            lpath.write(self.cat_file(rpath))
            return
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        pair = (self._entry(rpath)[1], os.fspath(lpath))
        batch = getattr(self._local, "get_batch", None)
        if batch is not None:
            batch.append(pair)
        else:
            self._download([pair])

    def _download(self, pairs: list[tuple[FileEntry, str]]) -> None:
        if not pairs:
            return
        paths = [os.path.abspath(p) for _, p in pairs]
        root = os.path.commonpath([os.path.dirname(p) for p in paths])
        entries = [FileEntry(Path(os.path.relpath(p, root)).as_posix(), e.size, e.sha256, e.url)
                   for (e, _), p in zip(pairs, paths, strict=True)]
        download(entries, root, workers=self.workers)

    def _open(self, path: str, mode: str = "rb", block_size: Any = None,
              autocommit: bool = True, cache_options: Any = None, **kwargs: Any) -> Any:
        if "r" in mode:
            found, entry = self._entry(path)
            return ReadFile(self, path, found, entry, block_size=block_size,
                            cache_options=cache_options, **kwargs)
        if "a" in mode or "+" in mode:
            raise NotImplementedError(f"{path}: versions are immutable; write whole files")
        key, name = self._write_target(path)
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        self.run(key[0])  # the open comes before any bytes: a refusal is learned first
        return WriteFile(self, path, key, name, self._staging.new_file(key), autocommit)


def _reuse_for(version: Version) -> float:
    """Seconds a signed listing may be reused: a minute, or half its URLs' remaining life."""
    try:
        expires = datetime.fromisoformat(str(version.urls_expire_at))
        left = (expires - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, min(SIGNED_FOR, left / 2))


__all__ = ["O41FileSystem", "ReadFile"]
