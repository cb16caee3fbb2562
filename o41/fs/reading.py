"""``o41://`` for reading: settings, paths, and reads of committed versions through signed
URLs. The writing half is ``o41.fs.writing``; the class fsspec finds is ``o41.fs.filesystem``.

Configured like the client, from the environment (``O41_ARTIFACTS_API_URL``,
``O41_ARTIFACTS_API_KEY``, ``SKYPILOT_CLUSTER_INFO`` or ``O41_PLACE``), or by storage options
``api_url``, ``api_key``, ``place``.

``latest`` is resolved once and then held by the instance, so a load that opens several
files (DCP's ``.metadata`` then its shards) never mixes two versions. It is resolved anew
when a commit marker (``.metadata``) is opened through ``latest``, when ``ls`` lists the
artifact, after this process commits, and on ``invalidate_cache()``: fsspec's convention
for a reader that polls for new checkpoints.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from typing import Any

from fsspec.spec import AbstractFileSystem

from o41.config import Place, Settings
from o41.errors import ConfigError, NotFound, TransportError
from o41.fs.readfile import ReadFile
from o41.models import FileEntry, Version
from o41.paths import O41Path, parse, step_in_name
from o41.transport.api import ApiClient
from o41.transport.memread import read_range
from o41.transport.put import BUFFER
from o41.transport.transfer import WORKERS
from o41.writing import deferred, registry
from o41.writing.stage import DEFAULT_MARKERS, DEFAULT_PARTS, StepTransaction, is_marker

SIGNED_FOR = 60.0  # at most this many seconds a signed listing is reused


class ReadingFileSystem(AbstractFileSystem):
    """The reading half of ``o41://``: settings, paths, signed listings and reads; the
    writing half (``o41.fs.writing``) is its subclass."""

    protocol = "o41"
    root_marker = ""
    blocksize = 8 * 1024 * 1024
    transaction_type = StepTransaction

    def __init__(self, api_url: str | None = None, api_key: str | None = None,
                 place: str | None = None, resume: str | None = "latest",
                 markers: tuple[str, ...] | list[str] = DEFAULT_MARKERS,
                 parts: tuple[str, ...] | list[str] = DEFAULT_PARTS,
                 workers: int = WORKERS, holder: str | None = None,
                 mode: str | None = None, on_fenced: str | None = None,
                 write_buffer: int = BUFFER, commit_after: float | None = None,
                 **kwargs: Any) -> None:
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
        self.parts = tuple(parts)
        self.workers = workers
        self.mode = registry.mode_of(mode)
        if not isinstance(write_buffer, int) or not 1 << 20 <= write_buffer <= 1 << 34:
            raise ConfigError(f"write_buffer={write_buffer!r}: bytes of one open file held in "
                              "memory, 1 MiB to 16 GiB")
        self.write_buffer = write_buffer
        self.commit_after = deferred.commit_after(commit_after)
        self.on_fenced = registry.on_fenced_policy(on_fenced)
        self.api = ApiClient.from_settings(settings)
        self._signed_cache: dict[tuple[str, str], tuple[float, Version]] = {}
        self._latest: dict[str, str] = {}  # artifact -> the version ``latest`` means here
        self._lock = threading.RLock()
        self._local = threading.local()

    # -- paths ------------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        """``o41://P/N/x`` -> ``P/N/x``; also ``o41:/P/N/x``, which ``pathlib`` makes of a URL
        (Ray Train joins its ``storage_path`` with ``Path(...).as_posix()``)."""
        if isinstance(path, str) and path.startswith("o41:/") and path[5:6] != "/":
            path = "o41://" + path[5:]
        return super()._strip_protocol(path)

    def _split(self, path: str) -> O41Path:
        return parse(self._strip_protocol(path))

    @classmethod
    def strip(cls, path: str) -> str:
        """``o41://P/N/x`` -> ``P/N/x`` (fsspec's ``_strip_protocol``, for the adapters)."""
        return str(cls._strip_protocol(path))

    @property
    def in_transaction(self) -> bool:
        """Whether a ``with fs.transaction:`` block is open (fsspec's ``_intrans``)."""
        return bool(self._intrans)

    def parse_path(self, path: str) -> O41Path:
        """The parsed ``o41://`` path (under ``mode="write"``, the artifact's first touch
        opens it)."""
        return self._split(path)

    def settle_for(self, where: O41Path) -> None:
        """Commit what this process closed in ``where``'s artifact before reading it."""
        self._settle_for(where)

    def version_at(self, where: O41Path) -> Version:
        """The committed version holding ``where`` (a file at the top too)."""
        return self._version_of(where)

    def forget_signed(self, artifact: str, version: str) -> None:
        """Drop the signed listing of a version (it was deleted)."""
        with self._lock:
            self._signed_cache.pop((artifact, version), None)

    def _settle_for(self, where: O41Path) -> None:
        """Read-your-writes: the writing half commits what this process closed in the
        artifact before a read of it; a reader has nothing to commit."""

    # -- reading ----------------------------------------------------------------------------

    def _latest_name(self, artifact: str) -> str:
        with self._lock:
            name = self._latest.get(artifact)
        return name or self._signed(artifact, "latest").version

    def _signed(self, artifact: str, version: str, fresh: bool = False) -> Version:
        """The version with signed URLs; ``latest`` as this instance holds it."""
        if version == "latest":
            with self._lock:
                version = self._latest.get(artifact, "latest")
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
            if version == "latest":
                self._latest[artifact] = found.version
        if version == "latest":
            registry.note_read(self.api, artifact, self.holder, found.version)
        return found

    signed = _signed

    def version(self, artifact: str, version: str = "latest") -> Version:
        """A committed version, signed; ``latest`` as this instance holds it."""
        self._settle_for(parse(f"{artifact}/{version}"))
        if version == "latest":
            version = self._latest_name(artifact)
        return self._signed(artifact, version)

    def version_of(self, path: str) -> Version:
        """The committed version that holds ``path`` (``o41://P/N/<file>`` at the top too)."""
        return self._version_of(parse(self._strip_protocol(path)))

    def hold_latest(self, artifact: str, version: str | None) -> None:
        """Make ``latest`` mean ``version`` here (after a commit, a listing, a marker)."""
        with self._lock:
            if version is None:
                self._latest.pop(artifact, None)
            else:
                self._latest[artifact] = version

    def invalidate_cache(self, path: str | None = None) -> None:
        """Forget what ``latest`` meant (for ``path``'s artifact, or all): the next read of
        ``latest`` asks the service again. A reader polling for checkpoints calls this."""
        with self._lock:
            if path is None:
                self._latest.clear()
                self._signed_cache.clear()
                return
        try:
            artifact = parse(self._strip_protocol(path)).artifact
        except FileNotFoundError:
            return
        self.hold_latest(artifact, None)

    def _top_version(self, path: O41Path) -> Version:
        """The version holding a file at the top: the step in its name, else the latest
        version that has it (``last.ckpt``), searching older ones last."""
        step = step_in_name(path.name)
        if step is not None:
            return self._signed(path.artifact, f"step-{step:08d}")
        latest = self._signed(path.artifact, "latest")
        if any(e.name == path.name for e in latest.files):
            return latest
        try:
            names = [v["version"] for v in self.api.list_versions(path.artifact)]
        except NotFound:
            raise FileNotFoundError(path.url) from None
        for name in reversed(names):
            found = self._signed(path.artifact, name)
            if any(e.name == path.name for e in found.files):
                return found
        raise FileNotFoundError(f"{path.url}: no version has a file {path.name!r}")

    def _version_of(self, path: O41Path) -> Version:
        self._settle_for(path)
        if path.at_top:
            if "/" in path.name:
                raise FileNotFoundError(f"{path.url}: not a path of an o41 artifact")
            return self._top_version(path)
        return self._signed(path.artifact, path.version or "latest")

    def _entry(self, path: str) -> tuple[Version, FileEntry]:
        where = self._split(path)
        if where.version is None and not where.name or not where.name:
            raise IsADirectoryError(path)
        if (where.version == "latest" or where.at_top and step_in_name(where.name) is None
                ) and is_marker(where.name, self.markers):
            self.hold_latest(where.artifact, None)  # a new load begins: see the newest
            # (``dcp.load(checkpoint_id="o41://P/N")`` reads the latest at the top)
        found = self._version_of(where)
        for entry in found.files:
            if entry.name == where.name:
                return found, entry
        if any(e.name.startswith(where.name + "/") for e in found.files):
            raise IsADirectoryError(path)
        raise FileNotFoundError(f"{path}: no such file in {found.version}")

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        where = self._split(path)
        base = self._strip_protocol(path).rstrip("/")
        if where.version is None and not where.name:
            self._settle_for(where)
            try:
                versions = self.api.list_versions(where.artifact)
            except NotFound:
                raise FileNotFoundError(path) from None
            self.hold_latest(where.artifact, versions[-1]["version"] if versions else None)
            if versions:
                registry.note_read(self.api, where.artifact, self.holder, versions[-1]["version"])
            out: list[dict[str, Any]] = [
                {"name": f"{where.artifact}/{v['version']}", "type": "directory",
                 "size": int(v.get("size") or 0), "step": v.get("step"),
                 "created_at": v.get("created_at"), "epoch": v.get("epoch")}
                for v in versions]
            return out if detail else [o["name"] for o in out]
        found = self._version_of(where)
        if where.at_top:
            entry = next((e for e in found.files if e.name == where.name), None)
            if entry is None:
                raise FileNotFoundError(path)
            return [self._file_info(base, entry)] if detail else [base]
        prefix = f"{where.name}/" if where.name else ""
        out, dirs = [], set()
        for e in found.files:
            if not e.name.startswith(prefix):
                if e.name == where.name:
                    return [self._file_info(base, e)] if detail else [base]
                continue
            head, sep, _ = e.name[len(prefix):].partition("/")
            if sep:
                dirs.add(head)
            else:
                out.append(self._file_info(f"{base}/{head}", e))
        out += [{"name": f"{base}/{d}", "type": "directory", "size": 0} for d in sorted(dirs)]
        if not out and where.name:
            raise FileNotFoundError(path)
        return out if detail else [o["name"] for o in out]

    @staticmethod
    def _file_info(name: str, e: FileEntry) -> dict[str, Any]:
        return {"name": name, "type": "file", "size": e.size, "sha256": e.sha256}

    def exists(self, path: str, **kwargs: Any) -> bool:
        """Whether ``path`` names something; a key without access raises ``o41.Forbidden``
        (a ``PermissionError``), as s3fs does, instead of answering False."""
        try:
            self.info(path)
        except FileNotFoundError:
            return False
        return True

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        where = self._split(path)
        base = self._strip_protocol(path).rstrip("/")
        if where.version is None and not where.name:
            self._settle_for(where)
            try:
                data = self.api.read_artifact(where.artifact)
            except NotFound:
                raise FileNotFoundError(path) from None
            return {"name": base, "type": "directory", "size": 0,
                    "latest": data.get("latest")}
        found = self._version_of(where)
        if not where.name:
            return {"name": base, "type": "directory", "size": found.size,
                    "version": found.version, "created_at": found.created_at}
        for e in found.files:
            if e.name == where.name:
                return {**self._file_info(base, e), "version": found.version,
                        "created_at": found.created_at}
        if any(e.name.startswith(where.name + "/") for e in found.files):
            return {"name": base, "type": "directory", "size": 0}
        raise FileNotFoundError(path)

    def modified(self, path: str) -> datetime:
        """When the version holding ``path`` was committed (Lightning picks ``last`` by it);
        for the artifact, when its latest version was."""
        info = self.info(path)
        created = info.get("created_at")
        if not created and info.get("latest"):
            created = self.info(f"{info['name']}/{info['latest']}").get("created_at")
        if not created:
            raise FileNotFoundError(f"{path}: has no commit time")
        return datetime.fromisoformat(str(created).replace("Z", "+00:00"))

    created = modified

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
        found = self._signed(found.artifact or self._split(path).artifact, found.version,
                             fresh=True)
        entry = next(e for e in found.files if e.name == entry.name)
        return read_range(entry, lo, hi, workers=self.workers)

    def _pin(self, path: Any) -> Any:
        """Resolve ``latest`` once, so a multi-file read never mixes two versions."""
        if isinstance(path, (list, tuple)):
            return [self._pin(p) for p in path]
        where = self._split(path)
        if where.version != "latest":
            return path
        version = self._latest_name(where.artifact)
        tail = f"/{where.name}" if where.name else ""
        return f"{where.artifact}/{version}{tail}" + ("/" if str(path).endswith("/") else "")

    def _open(self, path: str, mode: str = "rb", block_size: Any = None,
              autocommit: bool = True, cache_options: Any = None, **kwargs: Any) -> Any:
        if "r" in mode:
            found, entry = self._entry(path)
            return ReadFile(self, path, found, entry, block_size=block_size,
                            cache_options=cache_options, **kwargs)
        raise NotImplementedError(f"{path}: this filesystem reads only")


def _reuse_for(version: Version) -> float:
    """Seconds a signed listing may be reused: a minute, or half its URLs' remaining life."""
    try:
        expires = datetime.fromisoformat(str(version.urls_expire_at))
        left = (expires - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, min(SIGNED_FOR, left / 2))


__all__ = ["ReadingFileSystem", "SIGNED_FOR"]
