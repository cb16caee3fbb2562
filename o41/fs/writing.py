"""The writing half of the ``o41://`` filesystem: one launch per job, streamed files, steps
committed. What commits a step, and why the commit goes last: ``o41.writing.stage`` and
``o41.writing.deferred``; how a file streams: ``o41.writing.stream``; the job's
open: ``o41.writing.registry``. The
adapters (``o41.adapters.lightning``, ``o41.adapters.dcp``) use the public methods: ``launch``,
``write_target``, ``check_new_step``, ``writable``, ``refuse_if_fenced``, ``commit_step``,
``discard_step``, ``hold_step``, ``release_step`` and ``held_latest``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from o41.checkpoint import Run
from o41.errors import ConfigError, Immutable, NotFound, VersionExists
from o41.fs.reading import ReadingFileSystem
from o41.models import Version
from o41.paths import O41Path, outside_layout, parse, step_in_name, top_version
from o41.transport.put import check_answer, put_path_hashed, put_whole
from o41.writing import deferred, registry, retain
from o41.writing.guard import check_new_step, refuse_removal
from o41.writing.stage import HELD, StepKey, is_marker, is_part, uncommitted, warn_uncommitted
from o41.writing.stream import StreamFile

log = logging.getLogger("o41")


class WriteFile(StreamFile):
    """A file written into a step through one filesystem: its close may commit the step."""

    def __init__(self, fs: WritingFileSystem, launch: registry.Launch, path: str, key: StepKey,
                 name: str,
                 autocommit: bool) -> None:
        version = key[1]
        held = is_marker(name, HELD)
        self.fs, self.launch = fs, launch
        launch.writing(version, name, True)

        def done(size: int, value: Any) -> None:
            launch.writing(version, name, False)
            if held:
                launch.held_in_memory(version, name, value)
            else:
                launch.finished(version, name, size, value)

        def lost() -> None:
            launch.writing(version, name, False)
            launch.lose(version, name)

        super().__init__(path, key, name, autocommit=autocommit,
                         url=lambda: launch.declare(version, [name])[name], done=done,
                         lost=lost, in_memory=held, buffer=fs.write_buffer)

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if not self.discarded:
            self.fs.closed_write(self)


class WritingFileSystem(ReadingFileSystem):
    """The writing half of ``o41://``: one launch per job, streamed files, steps committed."""

    def _split(self, path: str) -> O41Path:
        """The parsed path; under ``mode="write"`` the first touch of an artifact opens it."""
        found = super()._split(path)
        if self.mode == "write":
            self.launch(found.artifact)
        return found

    def _open(self, path: str, mode: str = "rb", block_size: Any = None,
              autocommit: bool = True, cache_options: Any = None, **kwargs: Any) -> Any:
        if "r" in mode:
            return super()._open(path, mode, block_size, autocommit, cache_options, **kwargs)
        return self._open_write(path, mode, autocommit)

    def launch(self, artifact: str, resume: Any = "default") -> registry.Launch:
        """The artifact's launch in this process: opened once (``o41.writing.registry``), with the
        ``resume`` option unless told otherwise (a Lightning fit follows its ckpt_path)."""
        if "://" in artifact or artifact.count("/") > 1:
            artifact = parse(self._strip_protocol(artifact)).artifact
        if self.mode == "read":
            raise ConfigError(f"o41://{artifact}: this filesystem only reads (mode='read' or "
                              "O41_MODE=read), so it never opens an artifact for writing")
        resume = self.resume if resume == "default" else resume
        launch = registry.shared_launch(self.api, artifact, resume=resume, settings=self.settings,
                                     place=self.place, holder=self.holder,
                                     workers=self.workers, on_fenced=self.on_fenced)
        return launch

    def run(self, artifact: str, resume: Any = "default") -> Run:
        """The open of ``artifact`` (its token, epoch and what it resumed from)."""
        return self.launch(artifact, resume).run

    def held_latest(self, artifact: str) -> str | None:
        """The version ``latest`` means to this instance now, if it holds one."""
        with self._lock:
            return self._latest.get(artifact)

    def uncommitted(self) -> list[str]:
        """Steps written but not committed (not visible), as ``o41://P/N/step-…``."""
        found = uncommitted(registry.launches_of(self.api.api_url, self.holder))
        return sorted(f"o41://{launch.artifact}/{version}" for launch, version, _ in found)

    def discard_uncommitted(self) -> list[str]:
        """Drop every uncommitted step, warning about each (as at interpreter exit)."""
        return warn_uncommitted(registry.launches_of(self.api.api_url, self.holder))

    def write_target(self, path: str) -> tuple[StepKey, str]:
        """The step (``(artifact, version)``) and file name a written ``path`` goes to."""
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

    def _open_write(self, path: str, mode: str, autocommit: bool) -> WriteFile:
        if "a" in mode or "+" in mode:
            raise NotImplementedError(f"{path}: versions are immutable; write whole files")
        key, name = self.write_target(path)
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        launch = self._into_step(key)
        return WriteFile(self, launch, path, key, name, autocommit)

    def _into_step(self, key: StepKey) -> registry.Launch:
        """A write into ``key``: the refusals its commit would get come first, before any
        open (a refused write fences nobody); then the launch, opened if need be; then
        earlier steps of the artifact commit, and ``key`` waits for this file's close."""
        self._open_if_moved(key[0])
        self.check_new_step(key)
        launch = self.writable(key[0])
        launch.due.cancel(key[1])
        launch.due.settle(spare=lambda version: version == key[1])
        return launch

    def _open_if_moved(self, artifact: str) -> None:
        """A job that read the artifact before opening it, and whose ``latest`` has moved
        since: a box that still held it committed meanwhile. The open comes first then (it
        fences that box, and stops this process: ``registry.moved_since_read``), before the
        refusal the write would get (``version_exists``), which would blame the trainer."""
        if registry.launch_if_held(self.api, artifact, self.holder) is not None:
            return
        read = registry.read_before_open(self.api, artifact, self.holder)
        if read is None:
            return
        try:
            latest = self.api.read_artifact(artifact).get("latest")
        except NotFound:
            return
        if latest and str(latest) > read:
            self.writable(artifact)

    def check_new_step(self, key: StepKey) -> None:
        """Refuse a write into ``key`` whose commit must fail (``o41.writing.guard``), before any
        open."""
        held = registry.launch_if_held(self.api, key[0], self.holder)
        check_new_step(self.api, key, held, self.commit_after)

    def writable(self, artifact: str) -> registry.Launch:
        """The launch of ``artifact``, opened if need be; a fenced one stops here."""
        launch = self.launch(artifact)
        launch.check()
        return launch

    def closed_write(self, f: WriteFile) -> None:
        if not f.autocommit:
            return  # the transaction commits it
        if is_marker(f.relname, self.markers) or not self.commit_after:
            self.commit_step(f.key)
        elif not is_part(f.relname, self.parts):
            key = f.key
            f.launch.due.defer(key[1], self.commit_after, lambda: self.commit_step(key))

    def commit_pending(self, path: str | None = None) -> None:
        """Commit now every step this process closed its files in and has not committed
        (``o41.writing.deferred``), of ``path``'s artifact or of every artifact."""
        artifact = parse(self._strip_protocol(path)).artifact if path else None
        deferred.settle_all(launch for launch in registry.launches_of(self.api.api_url, self.holder)
                           if artifact in (None, launch.artifact))

    def _settle_for(self, where: O41Path) -> None:
        """Read-your-writes: a read, listing or removal in an artifact commits this
        process's due steps of it first; but a path into a due step that names neither a
        file written into it nor a folder of one (``exists`` before the step's next file)
        leaves that step waiting."""
        launch = registry.launch_if_held(self.api, where.artifact, self.holder)
        if launch is None or not launch.due.pending():
            return
        named = where.version
        if where.at_top:
            step = step_in_name(where.name)
            named = None if step is None else f"step-{step:08d}"

        def spare(version: str) -> bool:
            if version != named or not where.name:
                return False
            with launch.lock:
                done = launch.steps[version].done if version in launch.steps else {}
                return not any(n == where.name or n.startswith(where.name + "/") for n in done)

        launch.due.settle(spare)

    def hold_step(self, key: StepKey) -> None:
        """Keep closes and transactions from committing ``key``: its holder commits it
        (``commit_step(key, held=True)``), or drops it."""
        self.writable(key[0]).hold(key[1])

    def release_step(self, key: StepKey) -> None:
        launch = registry.launch_if_held(self.api, key[0], self.holder)
        if launch is not None:
            launch.release(key[1])

    def discard_step(self, key: StepKey) -> None:
        """Drop a step: none of its files becomes visible."""
        launch = registry.launch_if_held(self.api, key[0], self.holder)
        if launch is not None:
            launch.discard(key[1])

    def commit_step(self, key: StepKey, held: bool = False,
                    extra: list[dict[str, Any]] | None = None) -> Version | None:
        """Commit the step: ONE version of every file written into it, commit record last.

        A step another thread holds (``hold_step``) is committed only by that holder
        (``held=True``); a step whose upload another process started (a DCP rank's) only
        by that process. ``extra``: the files other processes wrote into the upload."""
        artifact, version_name = key
        launch = registry.launch_if_held(self.api, artifact, self.holder)
        if launch is None or not launch.has_step(version_name):
            return None
        step = launch.step(version_name)
        if (not held and step.holds) or step.joined or not (step.names or extra):
            return None
        names = step.names
        try:
            version = launch.commit(version_name, extra)
        except VersionExists as exc:
            raise VersionExists(
                f"o41://{artifact}/{version_name}: {exc.message}: files closed outside a "
                f"transaction commit their step ({', '.join(names)}) once none has been "
                f"open for {self.commit_after:g} s (commit_after, {deferred.ENV_COMMIT_AFTER})"
                "; write the files of one step inside `with fs.transaction:`, or put their "
                "folder with fs.put(dir, 'o41://P/N/step-XXXXXXXX/', recursive=True)",
                status=exc.status) from None
        with self._lock:
            self._signed_cache.pop(key, None)
        self.hold_latest(artifact, version.version)
        retain.after_commit(self, artifact)  # deletes that waited for a later step
        return version

    def put(self, lpath: Any, rpath: Any, recursive: bool = False, **kwargs: Any) -> None:
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
                    self.discard_step(key)
            raise
        finally:
            if outer:
                self._local.put_batch = None
        if outer and not self._intrans:
            for key in sorted(batch):
                self.commit_step(key)

    def pipe(self, path: Any, value: Any = None, **kwargs: Any) -> None:
        """``pipe({name: bytes, ...})`` is one call: each step its files land in becomes one
        version when it ends, as a ``put`` does (a single file commits at once anyway)."""
        if isinstance(path, dict) and not self._intrans:
            with self.transaction:
                super().pipe(path, value, **kwargs)  # type: ignore[misc]
            return
        super().pipe(path, value, **kwargs)  # type: ignore[misc]

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite",
                  **kwargs: Any) -> None:
        """One file from memory: streamed with its Content-Length, as one PUT."""
        with self.open(path, "xb" if mode == "create" else "wb", **kwargs) as f:
            f.write(value)

    def put_file(self, lpath: Any, rpath: str, callback: Any = None,
                 mode: str = "overwrite", **kwargs: Any) -> None:
        """Upload a local file as it is (``sendfile``), into its step's upload."""
        if os.path.isdir(lpath):
            return
        key, name = self.write_target(rpath)
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        launch = self._into_step(key)
        url = launch.declare(key[1], [name])[name]
        answer, size, sha256 = put_path_hashed(url, Path(lpath).absolute())
        check_answer(name, answer, size, sha256)
        launch.finished(key[1], name, size, sha256)
        if self._intrans:
            self.transaction.steps.add(key)
        elif getattr(self._local, "put_batch", None) is not None:
            self._local.put_batch.add(key)
        else:
            self.commit_step(key)

    def rm_file(self, path: str) -> None:
        where = self._split(path)
        launch = registry.launch_if_held(self.api, where.artifact, self.holder)
        if (where.version not in (None, "latest") and where.name and launch is not None
                and launch.remove(where.version, where.name)):
            return
        refuse_removal(self, path)

    def refuse_if_fenced(self, artifact: str) -> None:
        """A fenced zombie's clean-up of what the newer box committed (DCP removes an old
        ``.metadata`` before its rename) is a fence, not a permission slip."""
        launch = registry.launch_if_held(self.api, artifact, self.holder)
        exc = launch.superseded() if launch is not None else None
        if launch is not None and exc is not None:
            raise launch.fenced(exc)

    _rm = rm_file

    def rm(self, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        for p in path if isinstance(path, list) else [path]:
            where = self._split(p)
            launch = registry.launch_if_held(self.api, where.artifact, self.holder)
            if (where.version and not where.name and launch is not None
                    and launch.has_step(where.version)):
                launch.discard(where.version)
            elif where.name:
                self.rm_file(p)
            else:
                refuse_removal(self, p)

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth: Any = None,
           **kwargs: Any) -> None:
        """Rename a file not yet committed within its step (DCP writes ``.metadata.tmp``,
        held in memory, then renames it): a rename onto a marker commits the step like
        closing one does. A file that streamed already keeps its name."""
        key1, old = self.write_target(path1)
        key2, new = self.write_target(path2)
        launch = registry.launch_if_held(self.api, key1[0], self.holder)
        data = None
        if key1 == key2 and launch is not None:
            with launch.lock:
                data = launch.step(key1[1]).memory.pop(old, None)
        if data is None:
            raise Immutable(f"{path1} -> {path2}: only a file not yet committed, held until "
                            f"its rename ({', '.join(HELD)}), can be renamed, within its own "
                            "step: a streamed file keeps its name, and committed versions are "
                            "immutable (version_exists, VER-2)", status=409)
        assert launch is not None
        answer = put_whole(launch.declare(key1[1], [new])[new], data)
        check_answer(new, answer, len(data), hashlib.sha256(data).hexdigest())
        launch.finished(key1[1], new, len(data), answer["sha256"])
        if self._intrans:
            self.transaction.steps.add(key1)
        elif is_marker(new, self.markers):
            self.commit_step(key1)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Directories are implicit in file names: only the path's shape is checked (the
        top of an artifact holds versions and files, no other folders)."""
        where = self._split(path)
        if where.at_top:
            raise ConfigError(outside_layout(where))

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.makedirs(path, exist_ok=True)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        raise NotImplementedError("copying between o41 versions is not supported: get the "
                                  "files, then put them into a new step")


__all__ = ["WriteFile", "WritingFileSystem"]
