"""The writing part of ``o41://``: one launch per job, streamed files, steps committed. The
filesystem (``o41.fs.filesystem``) holds one ``Writer`` beside its ``Reader``.

What commits a step, and why the commit goes last: ``o41.writing.stage`` and
``o41.writing.deferred``; how a file streams: ``o41.writing.stream``; the job's open:
``o41.writing.registry``. The adapters (``o41.adapters.lightning``, ``o41.adapters.dcp``) use
the filesystem's public methods, which come here: ``launch``, ``write_target``,
``check_new_step``, ``writable``, ``refuse_if_fenced``, ``commit_step``, ``discard_step``,
``hold_step``, ``release_step`` and ``held_latest``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from o41.errors import ConfigError, Immutable, NotFound, VersionExists
from o41.fs.options import FsOptions
from o41.fs.reader import HeldVersions
from o41.models import Version
from o41.paths import O41Path, outside_layout, step_in_name, top_version
from o41.transport.api import ApiClient
from o41.transport.put import check_answer, put_path_hashed, put_whole
from o41.writing import deferred, registry
from o41.writing.guard import check_new_step
from o41.writing.stage import HELD, StepKey, is_marker, is_part, uncommitted, warn_uncommitted
from o41.writing.stream import StreamFile

DEFAULT = "default"  # ``resume``: the filesystem's own option


class WriteFile(StreamFile):
    """A file written into a step of ``launch``: ``on_close`` may commit the step."""

    def __init__(self, launch: registry.Launch, path: str, key: StepKey, name: str, *,
                 autocommit: bool, buffer: int,
                 on_close: Callable[[WriteFile], None]) -> None:
        version = key[1]
        held = is_marker(name, HELD)
        self.launch, self._on_close = launch, on_close
        launch.writing(version, name, True)

        def done(size: int, value: str | bytes) -> None:
            launch.writing(version, name, False)
            if isinstance(value, bytes):
                launch.held_in_memory(version, name, value)
            else:
                launch.finished(version, name, size, value)

        def lost() -> None:
            launch.writing(version, name, False)
            launch.lose(version, name)

        super().__init__(path, key, name, autocommit=autocommit,
                         url=lambda: launch.declare(version, [name])[name], done=done,
                         lost=lost, in_memory=held, buffer=buffer)

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if not self.discarded:
            self._on_close(self)


class Writer:
    """The job's launches as one filesystem writes through them. ``after_commit`` is told
    each artifact a step was committed in (deletes that waited for it: ``o41.writing.retain``)."""

    def __init__(self, options: FsOptions, api: ApiClient, held: HeldVersions,
                 after_commit: Callable[[str], None]) -> None:
        self.options, self.api, self.held = options, api, held
        self.after_commit = after_commit

    def _held(self, artifact: str) -> registry.Launch | None:
        return registry.launch_if_held(self.api, artifact, self.options.holder)

    def launch(self, artifact: str, resume: str | None = DEFAULT) -> registry.Launch:
        """The artifact's launch in this process: opened once (``o41.writing.registry``), with
        the ``resume`` option unless told otherwise (a Lightning fit follows its ckpt_path)."""
        o = self.options
        if o.mode == "read":
            raise ConfigError(f"o41://{artifact}: this filesystem only reads (mode='read' or "
                              "O41_MODE=read), so it never opens an artifact for writing")
        return registry.shared_launch(self.api, artifact,
                                      resume=o.resume if resume == DEFAULT else resume,
                                      settings=o.settings, place=o.place, holder=o.holder,
                                      workers=o.workers, on_fenced=o.on_fenced)

    def held_latest(self, artifact: str) -> str | None:
        """The version ``latest`` means to this filesystem now, if it holds one."""
        return self.held.latest_of(artifact)

    def uncommitted(self) -> list[str]:
        found = uncommitted(registry.launches_of(self.api.api_url, self.options.holder))
        return sorted(f"o41://{launch.artifact}/{version}" for launch, version, _ in found)

    def discard_uncommitted(self) -> list[str]:
        return warn_uncommitted(registry.launches_of(self.api.api_url, self.options.holder))

    def write_target(self, where: O41Path, path: str,
                     root_step: int | None) -> tuple[StepKey, str]:
        """The step (``(artifact, version)``) and file name a written ``path`` goes to;
        ``root_step``: the step files at the top go to in the open transaction."""
        if where.at_top:
            if "/" in where.name:
                raise ConfigError(outside_layout(where))
            try:
                version = top_version(where.name, root_step)
            except ValueError as exc:
                o = self.options
                if is_part(where.name, o.parts) or is_marker(where.name, o.markers):
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

    def open_file(self, path: str, key: StepKey, name: str, autocommit: bool) -> WriteFile:
        launch = self.into_step(key)
        return WriteFile(launch, path, key, name, autocommit=autocommit,
                         buffer=self.options.write_buffer, on_close=self.closed_write)

    def into_step(self, key: StepKey) -> registry.Launch:
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
        if self._held(artifact) is not None:
            return
        read = registry.read_before_open(self.api, artifact, self.options.holder)
        if read is None:
            return
        try:
            latest = self.api.read_artifact(artifact).get("latest")
        except NotFound:
            return
        if latest and str(latest) > read:
            self.writable(artifact)

    def check_new_step(self, key: StepKey) -> None:
        """Refuse a write into ``key`` whose commit must fail (``o41.writing.guard``), before
        any open."""
        check_new_step(self.api, key, self._held(key[0]), self.options.commit_after)

    def writable(self, artifact: str) -> registry.Launch:
        """The launch of ``artifact``, opened if need be; a fenced one stops here."""
        launch = self.launch(artifact)
        launch.check()
        return launch

    def closed_write(self, f: WriteFile) -> None:
        if not f.autocommit:
            return  # the transaction commits it
        o = self.options
        if is_marker(f.relname, o.markers) or not o.commit_after:
            self.commit_step(f.key)
        elif not is_part(f.relname, o.parts):
            key = f.key
            f.launch.due.defer(key[1], o.commit_after, lambda: self.commit_step(key))

    def commit_pending(self, artifact: str | None) -> None:
        """Commit now every step this process closed its files in and has not committed
        (``o41.writing.deferred``), of ``artifact`` or of every artifact."""
        deferred.settle_all(
            launch for launch in registry.launches_of(self.api.api_url, self.options.holder)
            if artifact in (None, launch.artifact))

    def settle_for(self, where: O41Path) -> None:
        """Read-your-writes: a read, listing or removal in an artifact commits this
        process's due steps of it first; but a path into a due step that names neither a
        file written into it nor a folder of one (``exists`` before the step's next file)
        leaves that step waiting."""
        launch = self._held(where.artifact)
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
        launch = self._held(key[0])
        if launch is not None:
            launch.release(key[1])

    def discard_step(self, key: StepKey) -> None:
        """Drop a step: none of its files becomes visible."""
        launch = self._held(key[0])
        if launch is not None:
            launch.discard(key[1])

    def commit_step(self, key: StepKey, held: bool = False,
                    extra: list[dict[str, object]] | None = None) -> Version | None:
        """Commit the step: ONE version of every file written into it, commit record last.

        A step another thread holds (``hold_step``) is committed only by that holder
        (``held=True``); a step whose upload another process started (a DCP rank's) only
        by that process. ``extra``: the files other processes wrote into the upload."""
        artifact, version_name = key
        launch = self._held(artifact)
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
                f"open for {self.options.commit_after:g} s (commit_after, "
                f"{deferred.ENV_COMMIT_AFTER}); write the files of one step inside "
                "`with fs.transaction:`, or put their folder with "
                "fs.put(dir, 'o41://P/N/step-XXXXXXXX/', recursive=True)",
                status=exc.status) from None
        self.held.forget(artifact, version_name)
        self.held.hold(artifact, version.version)
        self.after_commit(artifact)  # deletes that waited for a later step
        return version

    def put_local(self, key: StepKey, name: str, lpath: str | os.PathLike[str]) -> None:
        """Upload a local file as it is (``sendfile``), into its step's upload."""
        self.put_local_many([(key, name, lpath)])

    def put_local_many(self, files: list[tuple[StepKey, str, str | os.PathLike[str]]]
                       ) -> None:
        """Upload local files as they are: each step's files declared in one call, then
        sent side by side (``sendfile``, each hashed beside its PUT). One declaration per
        file cost a round trip each, one after the other, before its bytes could go."""
        by_step: dict[StepKey, dict[str, Path]] = {}
        for key, name, lpath in files:  # a name put twice: the last file, as before
            by_step.setdefault(key, {})[name] = Path(lpath).absolute()
        for key, paths in by_step.items():
            launch = self.into_step(key)
            urls = launch.declare(key[1], list(paths))

            def send(name: str, urls: dict[str, str] = urls,
                     paths: dict[str, Path] = paths) -> tuple[str, int, str]:
                answer, size, sha256 = put_path_hashed(urls[name], paths[name])
                check_answer(name, answer, size, sha256)
                return name, size, sha256

            if len(paths) == 1:
                sent = [send(next(iter(paths)))]
            else:
                with ThreadPoolExecutor(min(self.options.workers, len(paths)),
                                        thread_name_prefix="o41-put") as pool:
                    sent = list(pool.map(send, paths))
            for name, size, sha256 in sent:
                launch.finished(key[1], name, size, sha256)

    def drop_pending(self, where: O41Path) -> bool:
        """Remove a file this process wrote into a step not yet committed; False when
        ``where`` names none (a removal of something committed)."""
        launch = self._held(where.artifact)
        return (where.version not in (None, "latest") and bool(where.name)
                and launch is not None and launch.remove(where.version or "", where.name))

    def drop_step(self, where: O41Path) -> bool:
        """Drop a whole step this process is writing; False when it writes none there."""
        launch = self._held(where.artifact)
        if where.version and not where.name and launch is not None \
                and launch.has_step(where.version):
            launch.discard(where.version)
            return True
        return False

    def refuse_if_fenced(self, artifact: str) -> None:
        """A fenced zombie's clean-up of what the newer box committed (DCP removes an old
        ``.metadata`` before its rename) is a fence, not a permission slip."""
        launch = self._held(artifact)
        exc = launch.superseded() if launch is not None else None
        if launch is not None and exc is not None:
            raise launch.fenced(exc)

    def rename(self, source: tuple[StepKey, str], target: tuple[StepKey, str],
               paths: tuple[str, str]) -> None:
        """Rename a file held in memory within its step (DCP's ``.metadata.tmp``)."""
        (key1, old), (key2, new) = source, target
        launch = self._held(key1[0])
        data = None
        if key1 == key2 and launch is not None:
            with launch.lock:
                data = launch.step(key1[1]).memory.pop(old, None)
        if data is None or launch is None:
            raise Immutable(f"{paths[0]} -> {paths[1]}: only a file not yet committed, held "
                            f"until its rename ({', '.join(HELD)}), can be renamed, within its "
                            "own step: a streamed file keeps its name, and committed versions "
                            "are immutable (version_exists, VER-2)", status=409)
        answer = put_whole(launch.declare(key1[1], [new])[new], data)
        check_answer(new, answer, len(data), hashlib.sha256(data).hexdigest())
        launch.finished(key1[1], new, len(data), answer["sha256"])


__all__ = ["DEFAULT", "WriteFile", "Writer"]
