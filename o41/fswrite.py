"""The writing half of the ``o41://`` filesystem: open once, stage files, commit steps.

Kept apart from ``o41.filesystem`` (paths and reads). What commits a step, and why the
commit goes last, is told in ``o41.fsstage``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from .checkpoint import Run
from .checkpoint import open as open_run
from .fsbytes import staged_files
from .fsstage import StepKey, WriteFile, cleanup, is_marker, warn_uncommitted
from .models import Version

log = logging.getLogger("o41")


class StepWriter:
    """Mixed into ``O41FileSystem``; uses its ``api``, ``settings``, staging and options."""

    def run(self: Any, artifact: str) -> Run:
        """The artifact opened for writing: once per filesystem instance, on first write."""
        if "://" in artifact or artifact.count("/") > 1:
            artifact = self._split(artifact)[0]
        with self._lock:
            run = self._runs.get(artifact)
            if run is None:
                run = open_run(f"o41://{artifact}", resume=self.resume, settings=self.settings,
                               api=self.api, place=self.place, holder=self.holder,
                               workers=self.workers)
                self._runs[artifact] = run
            return run

    def uncommitted(self: Any) -> list[str]:
        """Steps written but not committed (not visible), as ``o41://P/N/step-…``."""
        with self._staging.lock:
            return sorted(s.location for s in self._staging.steps.values() if s.files)

    def discard_uncommitted(self: Any) -> list[str]:
        """Drop every uncommitted step, warning about each (as at interpreter exit)."""
        return warn_uncommitted(self._staging)

    def _closed_write(self: Any, f: WriteFile) -> None:
        self._staging.add(f.key, f.relname, f.local)
        self.invalidate_cache(self._strip_protocol(f.path))
        if f.autocommit and is_marker(f.relname, self.markers):
            self._commit_step(f.key)

    def _commit_step(self: Any, key: StepKey) -> Version | None:
        """Hash the step's files, upload them and commit: ONE version, commit record last."""
        step = self._staging.pop(key)
        if step is None or not step.files:
            return None
        try:
            local = staged_files(sorted(step.files.items()), self.workers)
            version = self.run(step.artifact).save_files(int(step.version[5:]), local)
        finally:
            cleanup(step)
        with self._lock:
            self._signed_cache.pop(key, None)
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

    def put_file(self: Any, lpath: Any, rpath: str, callback: Any = None,
                 mode: str = "overwrite", **kwargs: Any) -> None:
        """Stage a local file by reference (it is read when its step commits)."""
        if os.path.isdir(lpath):
            return
        key, name = self._write_target(rpath)
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        self.run(key[0])
        self._staging.add(key, name, Path(lpath).absolute())
        if self._intrans:
            self.transaction.steps.add(key)
        elif getattr(self._local, "put_batch", None) is not None:
            self._local.put_batch.add(key)
        else:
            self._commit_step(key)

    def rm_file(self: Any, path: str) -> None:
        key, name = self._write_target(path)
        if not self._staging.remove(key, name):
            raise PermissionError(f"{path}: committed versions are immutable (VER-2); "
                                  "only a file not yet committed can be removed")

    _rm = rm_file

    def rm(self: Any, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        for p in path if isinstance(path, list) else [path]:
            artifact, version, name = self._split(p)
            if version and not name and (artifact, version) in self._staging.steps:
                self._staging.discard((artifact, version))
            else:
                self.rm_file(p)

    def mv(self: Any, path1: str, path2: str, recursive: bool = False, maxdepth: Any = None,
           **kwargs: Any) -> None:
        """Rename a staged file within its step (DCP writes ``.metadata.tmp`` then renames
        it): a rename onto a marker commits the step like closing one does."""
        key1, old = self._write_target(path1)
        key2, new = self._write_target(path2)
        if key1 != key2 or not self._staging.rename(key1, old, new):
            raise PermissionError(f"{path1} -> {path2}: only a file not yet committed can be "
                                  "renamed, within its own step (committed versions are "
                                  "immutable)")
        if self._intrans:
            self.transaction.steps.add(key1)
        elif is_marker(new, self.markers):
            self._commit_step(key1)

    def makedirs(self: Any, path: str, exist_ok: bool = False) -> None:
        """Directories are implicit in file names: only the path's shape is checked."""
        self._split(path)

    def mkdir(self: Any, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self._split(path)

    def cp_file(self: Any, path1: str, path2: str, **kwargs: Any) -> None:
        raise NotImplementedError("copying between o41 versions is not supported: get the "
                                  "files, then put them into a new step")


__all__ = ["StepWriter"]
