"""The writing half of the ``o41://`` filesystem: open once, stage files, commit steps.

Kept apart from ``o41.filesystem`` (paths and reads). What commits a step, and why the
commit goes last, is told in ``o41.fsstage``. A file closed outside a transaction or a
``put`` commits its step at once, unless it is a part of a multi-file checkpoint (DCP's
``*.distcp``, ``*.tmp``: storage option ``parts``), which waits for its marker
(``.metadata``): so ``torch.save(obj, fsspec.open(".../step-N/model.pt", "wb"))``,
``pipe`` and ``touch`` are visible after close, as on s3fs, and a DCP checkpoint is one
version.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from . import fsrun
from .checkpoint import Run
from .errors import ConfigError, Fenced, Immutable, VersionExists
from .fsbytes import staged_files
from .fsguard import check_new_step, refuse_removal
from .fspaths import O41Path, outside_layout, parse, top_version
from .fsstage import StepKey, WriteFile, cleanup, is_marker, is_part, warn_uncommitted
from .models import Version

log = logging.getLogger("o41")


class StepWriter:
    """Mixed into ``O41FileSystem``; uses its ``api``, ``settings``, staging and options."""

    def run(self: Any, artifact: str, resume: Any = "default") -> Run:
        """The artifact opened for writing: once per process (``o41.fsrun``), with the
        ``resume`` option unless told otherwise (a Lightning fit follows its ckpt_path)."""
        if "://" in artifact or artifact.count("/") > 1:
            artifact = parse(self._strip_protocol(artifact)).artifact
        if self.mode == "read":
            raise ConfigError(f"o41://{artifact}: this filesystem only reads (mode='read' or "
                              "O41_MODE=read), so it never opens an artifact for writing")
        resume = self.resume if resume == "default" else resume
        return fsrun.shared_run(self.api, artifact, resume=resume, settings=self.settings,
                                place=self.place, holder=self.holder, workers=self.workers,
                                on_fenced=self.on_fenced)

    def uncommitted(self: Any) -> list[str]:
        """Steps written but not committed (not visible), as ``o41://P/N/step-…``."""
        with self._staging.lock:
            return sorted(s.location for s in self._staging.steps.values() if s.files)

    def discard_uncommitted(self: Any) -> list[str]:
        """Drop every uncommitted step, warning about each (as at interpreter exit)."""
        return warn_uncommitted(self._staging)

    def _write_target(self: Any, path: str) -> tuple[StepKey, str]:
        where: O41Path = self._split(path)
        if where.at_top:
            if "/" in where.name:
                raise ConfigError(outside_layout(where))
            trans = self._transaction if self._intrans else None
            try:
                version = top_version(where.name, getattr(trans, "root_step", None))
            except ValueError as exc:
                if is_part(where.name, self.parts) or is_marker(where.name, self.markers):
                    raise ConfigError(  # dcp.save(checkpoint_id="o41://P/N")
                        f"{where.url}: o41://{where.artifact} is the artifact, and a "
                        "multi-file checkpoint goes into one of its versions: "
                        f"checkpoint_id='o41://{where.artifact}/step-XXXXXXXX'") from None
                raise ConfigError(f"{where.url}: {exc}") from None
            return (where.artifact, version), where.name
        if where.version in (None, "latest") or not where.name:
            raise ConfigError(f"{path}: files are written into a version, "
                              "o41://project/name/step-XXXXXXXX/<file>")
        return (where.artifact, where.version), where.name

    def _open_write(self: Any, path: str, mode: str, autocommit: bool) -> WriteFile:
        if "a" in mode or "+" in mode:
            raise NotImplementedError(f"{path}: versions are immutable; write whole files")
        key, name = self._write_target(path)
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        self._writable(key[0])  # the open comes before any bytes: a refusal is learned first
        check_new_step(self, key)
        return WriteFile(self, path, key, name, self._staging.new_file(key), autocommit)

    def _writable(self: Any, artifact: str) -> Run:
        run = self.run(artifact)
        try:
            fsrun.check_not_fenced(run)
        except Fenced as exc:
            raise fsrun.fenced(run, exc, self.on_fenced) from None
        return run

    def _closed_write(self: Any, f: WriteFile) -> None:
        self._staging.add(f.key, f.relname, f.local)
        if not f.autocommit:
            return  # the transaction commits it
        if is_marker(f.relname, self.markers) or not is_part(f.relname, self.parts):
            self._commit_step(f.key)

    def _commit_step(self: Any, key: StepKey, held: bool = False) -> Version | None:
        """Hash the step's files, upload them and commit: ONE version, commit record last.

        A step another thread holds (``Staging.hold``) is committed only by that holder
        (``held=True``)."""
        if not held and self._staging.is_held(key):
            return None
        step = self._staging.pop(key)
        if step is None or not step.files:
            return None
        try:
            run = self._writable(step.artifact)
            local = staged_files(sorted(step.files.items()), self.workers)
            try:
                version = run.save_files(int(step.version[5:]), local)
            except Fenced as exc:
                raise fsrun.fenced(run, exc, self.on_fenced) from None
            except VersionExists as exc:
                raise VersionExists(
                    f"{step.location}: {exc.message}: a file closed outside a transaction "
                    f"commits its step ({', '.join(sorted(step.files))}); write the files of "
                    "one step inside `with fs.transaction:`, or put their folder with "
                    "fs.put(dir, 'o41://P/N/step-XXXXXXXX/', recursive=True)",
                    status=exc.status) from None
        finally:
            cleanup(step)
        with self._lock:
            self._signed_cache.pop(key, None)
        self.hold_latest(step.artifact, version.version)
        return version

    def put(self: Any, lpath: Any, rpath: Any, recursive: bool = False, **kwargs: Any) -> None:
        """Upload local files; each step they land in becomes one version when put ends
        (inside a transaction, when the transaction ends)."""
        outer = getattr(self._local, "put_batch", None) is None
        if outer:
            self._local.put_batch = set()
        batch: set[StepKey] = self._local.put_batch
        try:
            super().put(lpath, rpath, recursive=recursive, **kwargs)  # type: ignore[misc]
        except BaseException:
            if outer and not self._intrans:
                for key in batch:
                    self._staging.discard(key)
            raise
        finally:
            if outer:
                self._local.put_batch = None
        if outer and not self._intrans:
            for key in sorted(batch):
                self._commit_step(key)

    def pipe(self: Any, path: Any, value: Any = None, **kwargs: Any) -> None:
        """``pipe({name: bytes, ...})`` is one call: each step its files land in becomes one
        version when it ends, as a ``put`` does (a single file commits at once anyway)."""
        if isinstance(path, dict) and not self._intrans:
            with self.transaction:
                super().pipe(path, value, **kwargs)  # type: ignore[misc]
            return
        super().pipe(path, value, **kwargs)  # type: ignore[misc]

    def put_file(self: Any, lpath: Any, rpath: str, callback: Any = None,
                 mode: str = "overwrite", **kwargs: Any) -> None:
        """Stage a local file by reference (it is read when its step commits)."""
        if os.path.isdir(lpath):
            return
        key, name = self._write_target(rpath)
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        self._writable(key[0])
        check_new_step(self, key)
        self._staging.add(key, name, Path(lpath).absolute())
        if self._intrans:
            self.transaction.steps.add(key)
        elif getattr(self._local, "put_batch", None) is not None:
            self._local.put_batch.add(key)
        else:
            self._commit_step(key)

    def rm_file(self: Any, path: str) -> None:
        where = self._split(path)
        if where.version not in (None, "latest") and where.name and self._staging.remove(
                (where.artifact, where.version), where.name):
            return
        refuse_removal(self, path)

    def _refuse_if_fenced(self: Any, artifact: str) -> None:
        """A fenced zombie's clean-up of what the newer box committed (DCP removes an old
        ``.metadata`` before its rename) is a fence, not a permission slip."""
        run = fsrun.shared_run_if_held(self.api, artifact, self.holder)
        exc = fsrun.superseded(run) if run is not None else None
        if exc is not None:
            raise fsrun.fenced(run, exc, self.on_fenced)

    _rm = rm_file

    def rm(self: Any, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        for p in path if isinstance(path, list) else [path]:
            where = self._split(p)
            key = (where.artifact, where.version or "")
            if where.version and not where.name and key in self._staging.steps:
                self._staging.discard(key)
            elif where.name:
                self.rm_file(p)
            else:
                refuse_removal(self, p)

    def mv(self: Any, path1: str, path2: str, recursive: bool = False, maxdepth: Any = None,
           **kwargs: Any) -> None:
        """Rename a staged file within its step (DCP writes ``.metadata.tmp`` then renames
        it): a rename onto a marker commits the step like closing one does."""
        key1, old = self._write_target(path1)
        key2, new = self._write_target(path2)
        if key1 != key2 or not self._staging.rename(key1, old, new):
            raise Immutable(f"{path1} -> {path2}: only a file not yet committed can be "
                            "renamed, within its own step (committed versions are immutable: "
                            "version_exists, VER-2)", status=409)
        if self._intrans:
            self.transaction.steps.add(key1)
        elif is_marker(new, self.markers):
            self._commit_step(key1)

    def makedirs(self: Any, path: str, exist_ok: bool = False) -> None:
        """Directories are implicit in file names: only the path's shape is checked (the
        top of an artifact holds versions and files, no other folders)."""
        where = self._split(path)
        if where.at_top:
            raise ConfigError(outside_layout(where))

    def mkdir(self: Any, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.makedirs(path, exist_ok=True)

    def cp_file(self: Any, path1: str, path2: str, **kwargs: Any) -> None:
        raise NotImplementedError("copying between o41 versions is not supported: get the "
                                  "files, then put them into a new step")


__all__ = ["StepWriter"]
