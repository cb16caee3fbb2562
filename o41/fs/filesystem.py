"""``o41://`` as an fsspec filesystem (the ``fsspec.specs`` entry point): the only change a
trainer makes is the location string. Composed as s3fs is: one ``O41FileSystem`` holds a
``Reader`` (``o41.fs.reader``: signed listings, reads, downloads) and a ``Writer``
(``o41.fs.writer``: the job's launch, streamed files, steps committed), both made from one
``FsOptions`` (``o41.fs.options``); its fsspec methods parse paths and pass them on. Its files,
``ReadFile`` and ``WriteFile``, are given what they need when made.

Who opens, and when (``mode``): a reader never opens, so it never fences a trainer; a writing
job opens once (``o41.writing.registry``, ``o41.job``), at its first write, at the start of a
Lightning ``fit``, or before it starts under ``o41 run``.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

from fsspec.spec import AbstractFileSystem
from fsspec.utils import isfilelike

from o41.checkpoint import Run
from o41.errors import ConfigError
from o41.fs.frameworks import mend_loaded
from o41.fs.options import FsOptions
from o41.fs.reader import HeldVersions, Info, Reader, download
from o41.fs.readfile import ReadFile
from o41.fs.writer import DEFAULT, WriteFile, Writer
from o41.models import Version
from o41.paths import O41Path, outside_layout, parse, strip_url
from o41.transport.api import ApiClient
from o41.transport.put import BUFFER
from o41.transport.transfer import WORKERS
from o41.writing import retain
from o41.writing.guard import refuse_removal
from o41.writing.stage import (
    DEFAULT_MARKERS,
    DEFAULT_PARTS,
    StepKey,
    StepTransaction,
    is_marker,
)

PathArg = str | os.PathLike[str]


class O41FileSystem(AbstractFileSystem):
    """Checkpoint versions of o41 artifacts as directories of immutable files."""

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
                 **kwargs: object) -> None:
        super().__init__(**kwargs)  # fsspec's own: skip_instance_cache, asynchronous, ...
        self.options = o = FsOptions.from_options(
            api_url, api_key, place, resume, markers, parts, workers, holder, mode, on_fenced,
            write_buffer, commit_after)
        self.settings, self.place, self.holder = o.settings, o.place, o.holder
        self.mode, self.resume, self.markers, self.parts = o.mode, o.resume, o.markers, o.parts
        self.workers, self.write_buffer = o.workers, o.write_buffer
        self.commit_after, self.on_fenced = o.commit_after, o.on_fenced
        self.api = ApiClient.from_settings(o.settings)
        held = HeldVersions()
        self.writer = Writer(o, self.api, held,
                             after_commit=lambda artifact: retain.after_commit(self, artifact))
        self.reader = Reader(o, self.api, held, settle=self.writer.settle_for)
        self._local = threading.local()
        mend_loaded()

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> dict[str, object]:
        """fsspec asks this at every ``url_to_fs``/``open`` of an ``o41://`` URL, cached
        instance or not: the moment to teach a framework loaded since (``o41.fs.frameworks``)."""
        mend_loaded()
        return {}

    # -- paths ------------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: PathArg | list[PathArg]) -> str | list[str]:
        """fsspec's hook (``url_to_fs`` hands it a list too): ``o41.paths.strip_url``."""
        return [strip_url(p) for p in path] if isinstance(path, list) else strip_url(path)

    @classmethod
    def strip(cls, path: str) -> str:
        """``o41://P/N/x`` -> ``P/N/x`` (fsspec's ``_strip_protocol``, for the adapters)."""
        return strip_url(path)

    def parse_path(self, path: PathArg) -> O41Path:
        """The parsed ``o41://`` path; under ``mode="write"`` the first touch of an artifact
        opens it."""
        found = parse(strip_url(os.fspath(path)))
        if self.mode == "write":
            self.writer.launch(found.artifact)
        return found

    def _artifact(self, name: str) -> str:
        return parse(strip_url(name)).artifact if "://" in name \
            or name.count("/") > 1 else name

    # -- fsspec's transaction: its flags are set here, by this filesystem's own methods ----

    @property
    def in_transaction(self) -> bool:
        """Whether a ``with fs.transaction:`` block is open (fsspec's ``_intrans``)."""
        return bool(self._intrans)

    def mark_transaction(self, open_: bool) -> None:
        """``StepTransaction`` begins (True) or ends (False): fsspec's flags follow."""
        self._intrans = open_
        if not open_:
            self._transaction = None

    def _root_step(self) -> int | None:
        trans = self._transaction if self._intrans else None
        return trans.root_step if isinstance(trans, StepTransaction) else None

    def _in_batch(self, key: StepKey) -> bool:
        """A file put inside a transaction or a ``put`` call: its step commits at their end."""
        if self._intrans:
            self.transaction.steps.add(key)
            return True
        batch: set[StepKey] | None = getattr(self._local, "put_batch", None)
        if batch is not None:
            batch.add(key)
            return True
        return False

    # -- reading ----------------------------------------------------------------------------

    def signed(self, artifact: str, version: str, fresh: bool = False) -> Version:
        """The version with signed URLs; ``latest`` as this instance holds it."""
        return self.reader.signed(artifact, version, fresh)

    def version(self, artifact: str, version: str = "latest") -> Version:
        """A committed version, signed; ``latest`` as this instance holds it."""
        return self.reader.version(parse(f"{artifact}/{version}"))

    def version_of(self, path: str) -> Version:
        """The committed version that holds ``path`` (``o41://P/N/<file>`` at the top too)."""
        return self.reader.version_at(parse(strip_url(path)))

    def version_at(self, where: O41Path) -> Version:
        """The committed version holding ``where`` (a file at the top too)."""
        return self.reader.version_at(where)

    def settle_for(self, where: O41Path) -> None:
        """Commit what this process closed in ``where``'s artifact before reading it."""
        self.writer.settle_for(where)

    def hold_latest(self, artifact: str, version: str | None) -> None:
        """Make ``latest`` mean ``version`` here (after a commit, a listing, a marker)."""
        self.reader.held.hold(artifact, version)

    def forget_signed(self, artifact: str, version: str) -> None:
        """Drop the signed listing of a version (it was deleted)."""
        self.reader.held.forget(artifact, version)

    def invalidate_cache(self, path: str | None = None) -> None:
        """Forget what ``latest`` meant (for ``path``'s artifact, or all): the next read of
        ``latest`` asks the service again. A reader polling for checkpoints calls this."""
        if path is None:
            self.reader.held.clear()
            return
        try:
            artifact = parse(strip_url(path)).artifact
        except FileNotFoundError:
            return
        self.hold_latest(artifact, None)

    def ls(self, path: str, detail: bool = True, **kwargs: object) -> list[Info] | list[str]:
        found = self.reader.ls(self.parse_path(path), strip_url(path).rstrip("/"),
                               path)
        return found if detail else [str(o["name"]) for o in found]

    def info(self, path: str, **kwargs: object) -> Info:
        return self.reader.info(self.parse_path(path), strip_url(path).rstrip("/"),
                                path)

    def exists(self, path: str, **kwargs: object) -> bool:
        """Whether ``path`` names something; a key without access raises ``o41.Forbidden``
        (a ``PermissionError``), as s3fs does, instead of answering False."""
        try:
            self.info(path)
        except FileNotFoundError:
            return False
        return True

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
                 **kwargs: object) -> bytes:
        """Bytes of a file by parallel ranged GETs; a whole file is sha256-checked."""
        return self.reader.cat(self.parse_path(path), path, start, end)

    def _pin(self, path: str | list[str]) -> str | list[str]:
        """Resolve ``latest`` once, so a multi-file read never mixes two versions."""
        if isinstance(path, list | tuple):
            return [str(self._pin(p)) for p in path]
        return self.reader.pin(self.parse_path(path), str(path))

    def get(self, rpath: str | list[str], lpath: PathArg | list[PathArg],
            recursive: bool = False, **kwargs: object) -> None:
        """Download files; every file of the call goes in one parallel, verified download."""
        self._local.get_batch = batch = []
        try:
            super().get(self._pin(rpath), lpath, recursive=recursive, **kwargs)
        finally:
            self._local.get_batch = None
        download(batch, self.workers)

    def get_file(self, rpath: str, lpath: PathArg, callback: object = None,
                 outfile: object = None, **kwargs: object) -> None:
        if isfilelike(lpath):
            lpath.write(self.cat_file(rpath))  # type: ignore[union-attr]
            return
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        pair = (self.reader.entry(self.parse_path(rpath), rpath)[1], os.fspath(lpath))
        batch = getattr(self._local, "get_batch", None)
        if batch is not None:
            batch.append(pair)
        else:
            download([pair], self.workers)

    def _open(self, path: str, mode: str = "rb", block_size: int | None = None,
              autocommit: bool = True, cache_options: dict[str, object] | None = None,
              **kwargs: object) -> ReadFile | WriteFile:
        if "r" in mode:
            found, entry = self.reader.entry(self.parse_path(path), path)
            return ReadFile(self, path, found, entry, block_size=block_size,
                            cache_options=cache_options, **kwargs)
        if "a" in mode or "+" in mode:
            raise NotImplementedError(f"{path}: versions are immutable; write whole files")
        key, name = self.write_target(path)
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        return self.writer.open_file(path, key, name, autocommit)

    # -- writing ----------------------------------------------------------------------------

    def run(self, artifact: str, resume: str | None = DEFAULT) -> Run:
        """The open of ``artifact`` (its token, epoch and what it resumed from); ``resume``
        unless told otherwise (a Lightning fit follows its ckpt_path)."""
        return self.writer.launch(self._artifact(artifact), resume).run

    def uncommitted(self) -> list[str]:
        """Steps written but not committed (not visible), as ``o41://P/N/step-…``."""
        return self.writer.uncommitted()

    def discard_uncommitted(self) -> list[str]:
        """Drop every uncommitted step, warning about each (as at interpreter exit)."""
        return self.writer.discard_uncommitted()

    def commit_pending(self, path: str | None = None) -> None:
        """Commit now every step this process closed its files in and has not committed
        (``o41.writing.deferred``), of ``path``'s artifact or of every artifact."""
        self.writer.commit_pending(parse(strip_url(path)).artifact if path else None)

    def write_target(self, path: str) -> tuple[StepKey, str]:
        """The step (``(artifact, version)``) and file name a written ``path`` goes to."""
        return self.writer.write_target(self.parse_path(path), path, self._root_step())

    def discard_step(self, key: StepKey) -> None:
        """Drop a step: none of its files becomes visible."""
        self.writer.discard_step(key)

    def commit_step(self, key: StepKey, held: bool = False,
                    extra: list[dict[str, object]] | None = None) -> Version | None:
        """Commit the step: ONE version of every file written into it (``Writer``)."""
        return self.writer.commit_step(key, held, extra)

    def refuse_if_fenced(self, artifact: str) -> None:
        """A fenced zombie's clean-up is a fence, not a permission slip."""
        self.writer.refuse_if_fenced(artifact)

    def put(self, lpath: PathArg | list[PathArg], rpath: str | list[str],
            recursive: bool = False, **kwargs: object) -> None:
        """Upload local files; each step they land in becomes one version when put ends
        (inside a transaction, when the transaction ends)."""
        outer = getattr(self._local, "put_batch", None) is None
        if outer:
            self._local.put_batch = set()
            self._local.put_files = []
        batch: set[StepKey] = self._local.put_batch
        try:
            super().put(lpath, rpath, recursive=recursive, **kwargs)
            if outer:  # every file of the call checked and named: now their bytes go
                self.writer.put_local_many(self._local.put_files)
        except BaseException:
            if outer and not self._intrans:
                for key in batch:
                    self.discard_step(key)
            raise
        finally:
            if outer:
                self._local.put_batch = self._local.put_files = None
        if outer and not self._intrans:
            for key in sorted(batch):
                self.commit_step(key)

    def pipe(self, path: str | dict[str, bytes], value: bytes | None = None,
             **kwargs: object) -> None:
        """``pipe({name: bytes, ...})`` is one call: each step its files land in becomes one
        version when it ends, as a ``put`` does (a single file commits at once anyway)."""
        if isinstance(path, dict) and not self._intrans:
            with self.transaction:
                super().pipe(path, value, **kwargs)
            return
        super().pipe(path, value, **kwargs)

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite",
                  **kwargs: object) -> None:
        """One file from memory: streamed with its Content-Length, as one PUT."""
        with self.open(path, "xb" if mode == "create" else "wb", **kwargs) as f:
            f.write(value)

    def put_file(self, lpath: PathArg, rpath: str, callback: object = None,
                 mode: str = "overwrite", **kwargs: object) -> None:
        """Upload a local file as it is (``sendfile``), into its step's upload."""
        if os.path.isdir(lpath):
            return
        key, name = self.write_target(rpath)
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        pending = getattr(self._local, "put_files", None)
        if pending is not None and self._in_batch(key):
            pending.append((key, name, lpath))  # sent with the rest of the put, side by side
            return
        self.writer.put_local(key, name, lpath)
        if not self._in_batch(key):
            self.commit_step(key)

    def rm_file(self, path: str) -> None:
        if not self.writer.drop_pending(self.parse_path(path)):
            refuse_removal(self, path)

    _rm = rm_file

    def rm(self, path: str | list[str], recursive: bool = False,
           maxdepth: int | None = None) -> None:
        for p in path if isinstance(path, list) else [path]:
            where = self.parse_path(p)
            if self.writer.drop_step(where):
                continue
            if where.name:
                self.rm_file(p)
            else:
                refuse_removal(self, p)

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth: int | None = None,
           **kwargs: object) -> None:
        """Rename a file not yet committed within its step (DCP writes ``.metadata.tmp``,
        held in memory, then renames it): a rename onto a marker commits the step like
        closing one does. A file that streamed already keeps its name."""
        source, target = self.write_target(path1), self.write_target(path2)
        self.writer.rename(source, target, (path1, path2))
        key, new = source[0], target[1]
        if self._intrans:
            self.transaction.steps.add(key)
        elif is_marker(new, self.markers):
            self.commit_step(key)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Directories are implicit in file names: only the path's shape is checked (the
        top of an artifact holds versions and files, no other folders)."""
        where = self.parse_path(path)
        if where.at_top:
            raise ConfigError(outside_layout(where))

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: object) -> None:
        self.makedirs(path, exist_ok=True)

    def cp_file(self, path1: str, path2: str, **kwargs: object) -> None:
        raise NotImplementedError("copying between o41 versions is not supported: get the "
                                  "files, then put them into a new step")


__all__ = ["O41FileSystem"]
