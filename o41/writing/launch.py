"""A launch's state: its open (the token and its epoch), the fence watch, and the upload of
every step being written, under one lock.

A trainer's process may hold many ``o41://`` filesystem instances (fsspec keeps one per
thread and per set of options), but it is ONE launch per artifact (the registry is
``o41.writing.registry``): a save from a helper thread never opens again and fences its own main
thread, and a process forked after the open (a background save, a DataLoader worker) is the
same launch: it writes under its parent's open and never opens.

A launch that a newer one fenced must stop, not train on: Lightning's ``_atomic_save``
swallows the ``PermissionError`` a refused write raises, and a zombie would otherwise burn
its GPU to the end and exit 0. So a fenced launch stops at its next write call: the main
thread of a process that owns no locks of others (not a ``multiprocessing`` child, whose
parent waits on queues it shares with it) prints one line naming the newer holder and epoch
and exits with code 8; anywhere else, and under ``O41_ON_FENCED=raise`` (storage option
``on_fenced="raise"``), the call raises ``o41.Fenced``, and every later write does too. A
watch thread (every ``O41_FENCE_CHECK`` seconds, default 2) reads the artifact's epoch so
the next write knows without asking; it never ends a process itself, so fencing never
hangs a parent. Nothing a fenced process writes becomes visible either way: the service
refuses its token (FENCE-2, FENCE-3).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from o41.checkpoint import Run
from o41.errors import ApiError, ConfigError, ExitCode, Fenced, InvalidArgument, TransportError
from o41.job.tree import multiprocessing_parent
from o41.models import Version
from o41.transport.put import check_answer, put_whole
from o41.writing.deferred import DueSteps
from o41.writing.identity import ENV_ON_FENCED, fence_check_every

T = TypeVar("T")  # what a call with the launch's token answers

log = logging.getLogger("o41")


@dataclass
class StepUpload:
    """One step being written by this launch: its upload and what each file became."""

    version: str
    upload: str | None = None
    urls: dict[str, str] = field(default_factory=dict)  # declared name -> signed PUT URL
    done: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> size, sha256
    writing: dict[str, int] = field(default_factory=dict)  # names open for writing
    memory: dict[str, bytes] = field(default_factory=dict)  # held files (``*.tmp``)
    lost: set[str] = field(default_factory=set)  # streamed, then removed or cut short
    holds: int = 0
    joined: bool = False  # handed over by the job's coordinator, who commits it

    def files(self) -> list[dict[str, Any]]:
        return [{"name": n, "size": s, "sha256": h} for n, (s, h) in sorted(self.done.items())]

    @property
    def names(self) -> list[str]:
        return sorted({*self.done, *self.memory, *self.writing})


class Launch:
    """The writing state of one process for one artifact (``o41.writing.registry`` docstring)."""

    def __init__(self, run: Run, policy: str, *, joined: bool = False) -> None:
        self.run = run
        self.policy = policy
        self.joined = joined  # holds a handed-over token: never opens, never commits alone
        self.lock = threading.RLock()
        self.steps: dict[str, StepUpload] = {}
        self.stopped: Fenced | None = None
        self.latest: str | None = None  # the version this launch committed last
        self.due = DueSteps(self)  # closed steps, committed soon (o41.writing.deferred)
        self._watching = False

    @property
    def artifact(self) -> str:
        return self.run.artifact

    @property
    def token(self) -> str:
        return self.run.token

    @property
    def epoch(self) -> int:
        return self.run.epoch

    # -- fencing --------------------------------------------------------------------------

    def after_fork(self) -> None:
        """In a forked child: fresh locks (a lock another thread held at the fork would
        never be released), none of the parent's open files or due steps, its own watch."""
        self.lock = threading.RLock()
        self.due.reset()
        self._watching = False
        for step in self.steps.values():
            step.writing.clear()
        if self.stopped is None:
            self.watch()

    def retire(self) -> None:
        """Forgotten by its process (``fsrun.forget_launches``): its due steps never commit,
        its watch ends at its next look."""
        with self.due.cond:
            self.due.due.clear()
        with self.lock:
            self.steps.clear()
            self.stopped = self.stopped or Fenced(
                f"o41://{self.artifact}: this launch was forgotten by its process",
                status=409, artifact=self.artifact, epoch=self.epoch)

    def watch(self, every: float | None = None) -> None:
        """Start the fence watch (again, in a forked child), unless it is off."""
        every = fence_check_every() if every is None else every
        with self.lock:
            if self._watching or every <= 0:
                return
            self._watching = True
        threading.Thread(target=self._watch, args=(every,), daemon=True,
                         name=f"o41-fence-watch-{self.artifact}").start()

    def _watch(self, every: float) -> None:
        pid = os.getpid()
        while True:
            time.sleep(every)
            if os.getpid() != pid or self.stopped is not None:
                return
            exc = self.superseded()
            if exc is not None:
                with self.lock:
                    self.stopped = self.stopped or exc  # told at the next write call
                return

    def superseded(self) -> Fenced | None:
        """``Fenced`` naming the newer holder when the artifact moved past this epoch."""
        return superseded(self.run)

    def check(self) -> None:
        """A write call of a fenced launch stops here (``fenced``)."""
        if self.stopped is not None:
            raise self.fenced(self.stopped)

    def fenced(self, exc: Fenced) -> Fenced:
        """Record that this launch is fenced; under ``exit``, in the main thread of a process
        that owns no locks of others, end the process here with one line and code 8.

        Returns the exception to raise everywhere else.
        """
        with self.lock:
            if self.stopped is None:
                self.stopped = exc
        if self.policy == "raise" or not may_exit_here():
            return self.stopped
        message = " ".join(str(self.stopped).split())
        try:
            sys.stdout.flush()
            sys.stderr.write(f"o41: fenced: {message}; stopping this process (exit "
                             f"{int(ExitCode.FENCED)}; {ENV_ON_FENCED}=raise raises o41.Fenced "
                             "instead)\n")
            sys.stderr.flush()
        finally:
            os._exit(int(ExitCode.FENCED))

    def _call(self, what: str, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """An API call with this launch's token: a ``fenced`` refusal stops the launch."""
        self.check()
        try:
            return fn(*args, **kwargs)
        except Fenced as exc:
            raise self.fenced(self.run.explain_fenced(exc, what)) from None

    # -- steps ----------------------------------------------------------------------------

    def step(self, version: str) -> StepUpload:
        with self.lock:
            found = self.steps.get(version)
            if found is None:
                found = self.steps[version] = StepUpload(version)
            return found

    def has_step(self, version: str) -> bool:
        with self.lock:
            return version in self.steps

    def declare(self, version: str, names: list[str]) -> dict[str, str]:
        """Signed PUT URLs of streamed files of ``version`` (VER-6), declared once each:
        the step's first declaration starts its upload, later ones join it (VER-5)."""
        with self.lock:
            step = self.step(version)
            new = [n for n in dict.fromkeys(names) if n not in step.urls]
            if new:
                if step.upload is None and self.joined and not step.joined:
                    raise ConfigError(
                        f"o41://{self.artifact}/{version}: this process was handed the "
                        "token of another launch, without an upload for this step; only "
                        "the launch that opened the artifact starts a step")
                reply = self._call(version, self.run.api.write_version, self.artifact, self.token,
                                   version, [{"name": n} for n in new], upload=step.upload)
                step.upload = step.upload or reply["upload"]
                step.urls.update({f["name"]: f["url"] for f in reply["files"]})
            return {n: step.urls[n] for n in names}

    def join(self, version: str, upload: str) -> StepUpload:
        """Take part in an upload another process of the job started (DCP's coordinator)."""
        with self.lock:
            step = self.step(version)
            if step.upload not in (None, upload):
                raise InvalidArgument(f"o41://{self.artifact}/{version}: this process "
                                      f"writes upload {step.upload}, not {upload}", status=400)
            step.upload, step.joined = upload, True
            return step

    def writing(self, version: str, name: str, opened: bool) -> None:
        with self.lock:
            step = self.step(version)
            left = step.writing.get(name, 0) + (1 if opened else -1)
            if left > 0:
                step.writing[name] = left
            else:
                step.writing.pop(name, None)

    def finished(self, version: str, name: str, size: int, sha256: str) -> None:
        """A file's PUT answered: its size and sha256 go into the commit's list."""
        with self.lock:
            step = self.step(version)
            step.done[name] = (size, sha256)
            step.lost.discard(name)
            step.memory.pop(name, None)

    def held_in_memory(self, version: str, name: str, data: bytes) -> None:
        with self.lock:
            step = self.step(version)
            step.memory[name] = data
            step.done.pop(name, None)

    def remove(self, version: str, name: str) -> bool:
        """Forget a written file; False when this launch wrote none of that name. A file
        that streamed already stays declared in the upload: the step cannot commit
        without it, unless it is written again."""
        with self.lock:
            step = self.steps.get(version)
            if step is None or name not in {*step.done, *step.memory, *step.writing}:
                return False
            step.memory.pop(name, None)
            if step.done.pop(name, None) is not None:
                step.lost.add(name)
            return True

    def lose(self, version: str, name: str) -> None:
        """A file whose PUT was cut short (its writer failed): not in the upload."""
        with self.lock:
            step = self.steps.get(version)
            if step is not None and name in step.urls and name not in step.done:
                step.lost.add(name)

    def hold(self, version: str) -> None:
        """Keep closes and transactions of other threads from committing ``version``: its
        commit is made later, by whoever holds it (a Lightning fit's pending step)."""
        with self.lock:
            self.step(version).holds += 1

    def release(self, version: str) -> None:
        with self.lock:
            step = self.steps.get(version)
            if step is not None and step.holds > 0:
                step.holds -= 1

    def is_held(self, version: str) -> bool:
        with self.lock:
            step = self.steps.get(version)
            return step is not None and step.holds > 0

    def pop(self, version: str) -> StepUpload | None:
        self.due.cancel(version)
        with self.lock:
            return self.steps.pop(version, None)

    def discard(self, version: str) -> None:
        """Drop a step: nothing of it becomes visible (the service reclaims its upload)."""
        self.pop(version)

    def commit(self, version: str, extra: list[dict[str, Any]] | None = None) -> Version:
        """Commit the step as ONE version listing every streamed file (VER-6), with the
        files other processes of the job wrote into its upload (``extra``). Files held in
        memory (``*.tmp`` never renamed) are sent first. The step is gone afterwards,
        committed or not."""
        try:
            step = self.step(version)
            for name, data in sorted(step.memory.items()):
                answer = put_whole(self.declare(version, [name])[name], data)
                check_answer(name, answer, len(data), hashlib.sha256(data).hexdigest())
                self.finished(version, name, len(data), answer["sha256"])
            return self._commit(step, extra)
        finally:
            self.pop(version)

    def _commit(self, step: StepUpload, extra: list[dict[str, Any]] | None) -> Version:
        files = {f["name"]: f for f in step.files()}
        for f in extra or []:
            files.setdefault(f["name"], f)
        lost = sorted(step.lost - files.keys())
        if lost or step.writing:
            raise ConfigError(
                f"o41://{self.artifact}/{step.version}: cannot commit: "
                + (f"{', '.join(lost)} streamed and then removed or cut short; write it "
                   "again" if lost else f"{', '.join(sorted(step.writing))} still open"))
        if step.upload is None:
            raise ConfigError(f"o41://{self.artifact}/{step.version}: nothing was written")
        reply = self._call(step.version, self.run.api.commit, self.artifact, self.token,
                           step.upload, version=step.version, epoch=self.epoch,
                           files=[files[n] for n in sorted(files)])
        version = Version.from_json(reply)
        with self.lock:
            self.latest = version.version
        log.info("saved %s/%s (%d bytes) to %s", self.artifact, version.version, version.size,
                 version.location_name)
        return version



class UncommittedWarning(UserWarning):
    """A step was written but got no commit signal: it is not, and will not be, visible."""


def uncommitted(launches: Iterable[Launch]) -> list[tuple[Launch, str, list[str]]]:
    """Steps of ``launches`` with written files and no commit (a joined step, a DCP rank's
    part of its coordinator's upload, is the coordinator's to commit)."""
    found = []
    for launch in launches:
        with launch.lock:
            for step in launch.steps.values():
                if step.names and not step.joined:
                    found.append((launch, step.version, step.names))
    return found


def warn_uncommitted(launches: Iterable[Launch]) -> list[str]:
    """Warn about, and drop, every uncommitted step; returns their locations."""
    gone = []
    for launch, version, names in uncommitted(launches):
        launch.discard(version)
        where = f"o41://{launch.artifact}/{version}"
        gone.append(where)
        warnings.warn(
            f"{where} was written ({', '.join(names)}) but never committed, so it is not "
            "visible: end a transaction, put the directory, or close a marker file "
            "(storage option markers=) to commit a step", UncommittedWarning, stacklevel=2)
    return gone


def may_exit_here() -> bool:
    """Whether ending the process now strands nobody: the main thread, and not a
    ``multiprocessing`` child (a ``Pool``'s worker: its parent would wait for its answer)."""
    return (threading.current_thread() is threading.main_thread()
            and multiprocessing_parent() is None)


def superseded(run: Run) -> Fenced | None:
    """``Fenced`` naming the newer holder when the artifact has moved past ``run``'s epoch."""
    try:
        info = run.api.read_artifact(run.artifact)
    except (ApiError, TransportError):
        return None  # unreachable is not fenced: the next write will tell
    epoch = info.get("epoch")
    if not isinstance(epoch, int) or epoch <= run.epoch:
        return None
    holder = info.get("holder")
    return Fenced(f"{run.location}: this run (holder {run.holder!r}, epoch {run.epoch}) was "
                  f"fenced by holder {holder!r} at epoch {epoch}", status=409,
                  artifact=run.artifact, epoch=run.epoch, by_holder=holder, by_epoch=epoch)
