"""The reading part of ``o41://``: committed versions through signed URLs. The filesystem
(``o41.fs.filesystem``) holds one ``Reader`` beside its ``Writer`` (``o41.fs.writer``); both
share one ``HeldVersions``.

``latest`` is resolved once and then held, so a load that opens several files (DCP's
``.metadata`` then its shards) never mixes two versions. It is resolved anew when a commit
marker (``.metadata``) is opened through ``latest``, when ``ls`` lists the artifact, after
this process commits, and on ``invalidate_cache()``: fsspec's convention for a reader that
polls for new checkpoints.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from o41.errors import NotFound, TransportError
from o41.fs.options import FsOptions
from o41.models import FileEntry, Version
from o41.paths import O41Path, step_in_name
from o41.transport import transfer
from o41.transport.api import ApiClient
from o41.transport.memread import read_range
from o41.writing import registry
from o41.writing.stage import is_marker

SIGNED_FOR = 60.0  # at most this many seconds a signed listing is reused

Info = dict[str, object]


class HeldVersions:
    """What ``latest`` means to one filesystem, and the signed listings it reuses."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._latest: dict[str, str] = {}  # artifact -> the version ``latest`` means here
        self._signed: dict[tuple[str, str], tuple[float, Version]] = {}

    def latest_of(self, artifact: str) -> str | None:
        with self.lock:
            return self._latest.get(artifact)

    def hold(self, artifact: str, version: str | None) -> None:
        with self.lock:
            if version is None:
                self._latest.pop(artifact, None)
            else:
                self._latest[artifact] = version

    def forget(self, artifact: str, version: str) -> None:
        with self.lock:
            self._signed.pop((artifact, version), None)

    def clear(self) -> None:
        with self.lock:
            self._latest.clear()
            self._signed.clear()

    def reusable(self, key: tuple[str, str], now: float) -> Version | None:
        with self.lock:
            hit = self._signed.get(key)
        return hit[1] if hit and now < hit[0] else None

    def keep(self, artifact: str, found: Version, until: float, as_latest: bool) -> None:
        with self.lock:
            self._signed[(artifact, found.version)] = (until, found)
            if as_latest:
                self._latest[artifact] = found.version


class Reader:
    """Signed listings and reads of committed versions. ``settle`` is the writer's
    read-your-writes: it commits what this process closed in an artifact before a read."""

    def __init__(self, options: FsOptions, api: ApiClient, held: HeldVersions,
                 settle: Callable[[O41Path], None]) -> None:
        self.options, self.api, self.held = options, api, held
        self.settle = settle

    def latest_name(self, artifact: str) -> str:
        return self.held.latest_of(artifact) or self.signed(artifact, "latest").version

    def signed(self, artifact: str, version: str, fresh: bool = False) -> Version:
        """The version with signed URLs; ``latest`` as this filesystem holds it."""
        if version == "latest":
            version = self.held.latest_of(artifact) or "latest"
        now = time.monotonic()
        if version != "latest" and not fresh:
            hit = self.held.reusable((artifact, version), now)
            if hit is not None:
                return hit
        try:
            data = self.api.read_version(artifact, version, urls=True,
                                         place=self.options.place)
        except NotFound as exc:
            raise FileNotFoundError(f"o41://{artifact}/{version}: {exc.message}") from None
        found = Version.from_json(data)
        self.held.keep(artifact, found, now + _reuse_for(found), as_latest=version == "latest")
        if version == "latest":
            registry.note_read(self.api, artifact, self.options.holder, found.version)
        return found

    def version(self, where: O41Path) -> Version:
        """A committed version, signed; ``latest`` as this filesystem holds it."""
        self.settle(where)
        version = where.version or "latest"
        if version == "latest":
            version = self.latest_name(where.artifact)
        return self.signed(where.artifact, version)

    def version_at(self, where: O41Path) -> Version:
        """The committed version holding ``where`` (a file at the top too)."""
        self.settle(where)
        if where.at_top:
            if "/" in where.name:
                raise FileNotFoundError(f"{where.url}: not a path of an o41 artifact")
            return self._top_version(where)
        return self.signed(where.artifact, where.version or "latest")

    def _top_version(self, where: O41Path) -> Version:
        """The version holding a file at the top: the step in its name, else the latest
        version that has it (``last.ckpt``), searching older ones last."""
        step = step_in_name(where.name)
        if step is not None:
            return self.signed(where.artifact, f"step-{step:08d}")
        latest = self.signed(where.artifact, "latest")
        if any(e.name == where.name for e in latest.files):
            return latest
        try:
            names = [v["version"] for v in self.api.list_versions(where.artifact)]
        except NotFound:
            raise FileNotFoundError(where.url) from None
        for name in reversed(names):
            found = self.signed(where.artifact, name)
            if any(e.name == where.name for e in found.files):
                return found
        raise FileNotFoundError(f"{where.url}: no version has a file {where.name!r}")

    def entry(self, where: O41Path, path: str) -> tuple[Version, FileEntry]:
        """The committed file ``where`` names, and its version."""
        if where.version is None and not where.name or not where.name:
            raise IsADirectoryError(path)
        if (where.version == "latest" or where.at_top and step_in_name(where.name) is None
                ) and is_marker(where.name, self.options.markers):
            self.held.hold(where.artifact, None)  # a new load begins: see the newest
            # (``dcp.load(checkpoint_id="o41://P/N")`` reads the latest at the top)
        found = self.version_at(where)
        for entry in found.files:
            if entry.name == where.name:
                return found, entry
        if any(e.name.startswith(where.name + "/") for e in found.files):
            raise IsADirectoryError(path)
        raise FileNotFoundError(f"{path}: no such file in {found.version}")

    def ls(self, where: O41Path, base: str, path: str) -> list[Info]:
        """fsspec's detailed listing of ``where`` (``base``: its path without protocol)."""
        if where.version is None and not where.name:
            self.settle(where)
            try:
                versions = self.api.list_versions(where.artifact)
            except NotFound:
                raise FileNotFoundError(path) from None
            self.held.hold(where.artifact, versions[-1]["version"] if versions else None)
            if versions:
                registry.note_read(self.api, where.artifact, self.options.holder,
                                   versions[-1]["version"])
            return [{"name": f"{where.artifact}/{v['version']}", "type": "directory",
                     "size": int(v.get("size") or 0), "step": v.get("step"),
                     "created_at": v.get("created_at"), "epoch": v.get("epoch")}
                    for v in versions]
        found = self.version_at(where)
        if where.at_top:
            entry = next((e for e in found.files if e.name == where.name), None)
            if entry is None:
                raise FileNotFoundError(path)
            return [file_info(base, entry)]
        prefix = f"{where.name}/" if where.name else ""
        out: list[Info] = []
        dirs: set[str] = set()
        for e in found.files:
            if not e.name.startswith(prefix):
                if e.name == where.name:
                    return [file_info(base, e)]
                continue
            head, sep, _ = e.name[len(prefix):].partition("/")
            if sep:
                dirs.add(head)
            else:
                out.append(file_info(f"{base}/{head}", e))
        out += [{"name": f"{base}/{d}", "type": "directory", "size": 0} for d in sorted(dirs)]
        if not out and where.name:
            raise FileNotFoundError(path)
        return out

    def info(self, where: O41Path, base: str, path: str) -> Info:
        if where.version is None and not where.name:
            self.settle(where)
            try:
                data = self.api.read_artifact(where.artifact)
            except NotFound:
                raise FileNotFoundError(path) from None
            return {"name": base, "type": "directory", "size": 0,
                    "latest": data.get("latest")}
        found = self.version_at(where)
        if not where.name:
            return {"name": base, "type": "directory", "size": found.size,
                    "version": found.version, "created_at": found.created_at}
        for e in found.files:
            if e.name == where.name:
                return {**file_info(base, e), "version": found.version,
                        "created_at": found.created_at}
        if any(e.name.startswith(where.name + "/") for e in found.files):
            return {"name": base, "type": "directory", "size": 0}
        raise FileNotFoundError(path)

    def cat(self, where: O41Path, path: str, start: int | None, end: int | None) -> bytes:
        """Bytes of a file by parallel ranged GETs; a whole file is sha256-checked."""
        found, entry = self.entry(where, path)
        size = entry.size
        lo = 0 if start is None else (start if start >= 0 else max(0, size + start))
        hi = size if end is None else (end if end >= 0 else max(0, size + end))
        try:
            return read_range(entry, lo, hi, workers=self.options.workers)
        except TransportError as exc:
            if exc.status != 403:
                raise
        # the URL expired since it was signed: sign the same version again, once
        found = self.signed(found.artifact or where.artifact, found.version, fresh=True)
        entry = next(e for e in found.files if e.name == entry.name)
        return read_range(entry, lo, hi, workers=self.options.workers)

    def pin(self, where: O41Path, path: str) -> str:
        """``path`` with ``latest`` resolved once, so a multi-file read never mixes two
        versions."""
        if where.version != "latest":
            return path
        version = self.latest_name(where.artifact)
        tail = f"/{where.name}" if where.name else ""
        return f"{where.artifact}/{version}{tail}" + ("/" if path.endswith("/") else "")


def download(pairs: list[tuple[FileEntry, str]], workers: int) -> None:
    """Files to local paths, in one parallel, sha256-verified download."""
    if not pairs:
        return
    paths = [os.path.abspath(p) for _, p in pairs]
    root = os.path.commonpath([os.path.dirname(p) for p in paths])
    entries = [FileEntry(Path(os.path.relpath(p, root)).as_posix(), e.size, e.sha256, e.url)
               for (e, _), p in zip(pairs, paths, strict=True)]
    transfer.download(entries, root, workers=workers)


def file_info(name: str, e: FileEntry) -> Info:
    return {"name": name, "type": "file", "size": e.size, "sha256": e.sha256}


def _reuse_for(version: Version) -> float:
    """Seconds a signed listing may be reused: a minute, or half its URLs' remaining life."""
    try:
        expires = datetime.fromisoformat(str(version.urls_expire_at))
        left = (expires - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, min(SIGNED_FOR, left / 2))


__all__ = ["HeldVersions", "Info", "Reader", "SIGNED_FOR", "download", "file_info"]
