"""Files written under ``o41://P/N/step-XXXXXXXX/`` before their version is committed.

The contract commits a version as one record, after all its files are uploaded (the commit
goes last: nothing of a step is visible until its writer says it is done, and a writer that
dies first leaves nothing). fsspec writers, though, open and close files one at a time. So
a written file is staged on local disk and the step waits for its commit signal: the end of
a transaction, the end of a ``put``, or the close of a marker file (torch DCP's
``.metadata``, Orbax's ``commit_success.txt``). A step that never gets one is never
uploaded, and is named in an ``UncommittedWarning`` when the filesystem goes away.
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import shutil
import tempfile
import threading
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsspec.transaction import Transaction

from .fsbytes import StagingWriter

if TYPE_CHECKING:
    from .filesystem import O41FileSystem

DEFAULT_MARKERS = (".metadata", "commit_success.txt")
# Files that are parts of a multi-file checkpoint: closing one waits for its marker (DCP's
# shards, and its ``.metadata.tmp`` before the rename onto ``.metadata``).
DEFAULT_PARTS = ("*.distcp", "*.tmp")
StepKey = tuple[str, str]  # (artifact, version)
STAGE_PREFIX = "o41-stage-"


class UncommittedWarning(UserWarning):
    """A step was written but got no commit signal: it is not, and will not be, visible."""


@dataclass
class Step:
    """The staged files of one version: name -> local path (a staged copy or the caller's)."""

    artifact: str
    version: str
    files: dict[str, Path] = field(default_factory=dict)
    tmpdir: Path | None = None

    @property
    def location(self) -> str:
        return f"o41://{self.artifact}/{self.version}"


class Staging:
    """Every uncommitted step of one process and API; safe to use from many threads.

    Shared by all filesystem instances of the process (``shared_staging``): DCP's writer
    threads, a helper thread's instance and the main thread's instance stage into the same
    steps, and the marker closed by any of them commits them all.
    """

    def __init__(self, root: str | None = None) -> None:
        self.root = root
        self.steps: dict[StepKey, Step] = {}
        self.held: dict[StepKey, int] = {}  # steps whose commit another thread will make
        self.lock = threading.RLock()

    def hold(self, key: StepKey) -> None:
        """Keep closes and transactions of other threads from committing ``key``: its commit
        is made later, by whoever holds it (an async Lightning save's executor)."""
        with self.lock:
            self.held[key] = self.held.get(key, 0) + 1

    def release(self, key: StepKey) -> None:
        with self.lock:
            left = self.held.get(key, 0) - 1
            if left > 0:
                self.held[key] = left
            else:
                self.held.pop(key, None)

    def is_held(self, key: StepKey) -> bool:
        with self.lock:
            return key in self.held

    def new_file(self, key: StepKey) -> Path:
        """A fresh local file to stage one written file of ``key`` in."""
        with self.lock:
            step = self._step(key)
            if step.tmpdir is None:
                step.tmpdir = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-",
                                                    dir=self.root))
            fd, name = tempfile.mkstemp(dir=step.tmpdir)
        open(fd).close()
        return Path(name)

    def add(self, key: StepKey, name: str, path: Path) -> None:
        with self.lock:
            self._step(key).files[name] = path

    def remove(self, key: StepKey, name: str) -> bool:
        """Forget a staged file; False when there was none of that name."""
        with self.lock:
            step = self.steps.get(key)
            if step is None or name not in step.files:
                return False
            step.files.pop(name)
            return True

    def rename(self, key: StepKey, old: str, new: str) -> bool:
        with self.lock:
            step = self.steps.get(key)
            if step is None or old not in step.files:
                return False
            step.files[new] = step.files.pop(old)
            return True

    def staged(self, key: StepKey, name: str) -> Path | None:
        with self.lock:
            step = self.steps.get(key)
            return step.files.get(name) if step else None

    def pop(self, key: StepKey) -> Step | None:
        with self.lock:
            return self.steps.pop(key, None)

    def discard(self, key: StepKey) -> None:
        step = self.pop(key)
        if step is not None:
            cleanup(step)

    def _step(self, key: StepKey) -> Step:
        if key not in self.steps:
            self.steps[key] = Step(*key)
        return self.steps[key]


_shared: dict[tuple[str, str, str | None], Staging] = {}
_shared_lock = threading.Lock()


def shared_staging(api_url: str, holder: str, root: str | None = None) -> Staging:
    """The launch's staging (one API, one holder: ``o41.fsrun``'s key); the first use in a
    process reclaims what dead processes left."""
    with _shared_lock:
        staging = _shared.get((api_url, holder, root))
        if staging is None:
            reclaim_dead(root)
            staging = _shared[(api_url, holder, root)] = Staging(root)
            atexit.register(warn_uncommitted, staging)
        return staging


def _forget_after_fork() -> None:
    global _shared_lock
    _shared.clear()
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def reclaim_dead(root: str | None = None) -> list[Path]:
    """Remove staging folders of processes that no longer run (a killed save leaves one)."""
    base = Path(root or tempfile.gettempdir())
    gone = []
    for folder in base.glob(f"{STAGE_PREFIX}*-*"):
        pid_text = folder.name[len(STAGE_PREFIX):].partition("-")[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _alive(int(pid_text)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def cleanup(step: Step) -> None:
    if step.tmpdir is not None:
        shutil.rmtree(step.tmpdir, ignore_errors=True)


def warn_uncommitted(staging: Staging) -> list[str]:
    """Warn about, and drop, every step still staged; returns their locations."""
    with staging.lock:
        steps = list(staging.steps.values())
        staging.steps.clear()
    for step in steps:
        if step.files:
            warnings.warn(
                f"{step.location} was written ({', '.join(sorted(step.files))}) but never "
                "committed, so it is not visible: end a transaction, put the directory, or "
                "close a marker file (storage option markers=) to commit a step",
                UncommittedWarning, stacklevel=2)
        cleanup(step)
    return [s.location for s in steps if s.files]


def is_marker(name: str, markers: tuple[str, ...]) -> bool:
    """A marker matches the file's name within the step or its base name (glob patterns)."""
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, m) or fnmatch.fnmatchcase(base, m) for m in markers)


is_part = is_marker  # the same matching, against the ``parts`` patterns


class WriteFile(StagingWriter):
    """A file being written to a step: staged (in memory or at ``local``, hashed as it is
    written, see ``o41.fsbytes``) and handed to the step on close.

    Leaving a ``with`` block by an exception, or being collected unclosed, discards it, so a
    marker file cut short by an error never commits its step.
    """

    def __init__(self, fs: O41FileSystem, path: str, key: StepKey, name: str, local: Path,
                 autocommit: bool) -> None:
        super().__init__(local)
        self.fs, self.path, self.key, self.relname = fs, path, key, name
        self.autocommit = autocommit
        self.discarded = False

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is not None:
            self.discard()
        else:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.local = self.finish(self.relname)  # carries its size and sha256 to the commit
        if not self.discarded:
            self.fs._closed_write(self)

    def __del__(self) -> None:
        # Collected while still open: its writer never finished it (an exception outside a
        # ``with`` block). Closing would stage it, and a marker would commit a torn step.
        if not self.closed:
            self.discard()

    def commit(self) -> None:
        """fsspec's per-file commit: the step commits as a whole (see ``StepTransaction``)."""
        self.close()

    def discard(self) -> None:
        self.discarded = True
        self.drop()


class StepTransaction(Transaction):
    """``with fs.transaction:``: the files of each step written inside become ONE version."""

    def __init__(self, fs: O41FileSystem, **kwargs: Any) -> None:
        super().__init__(fs, **kwargs)
        self.steps: set[StepKey] = set()
        self.depth = 0
        self.failed = False
        self.root_step: int | None = None  # the step files at the artifact's top go to
        # steps whose commit is someone else's (a Lightning fit's pending step): told at the
        # end whether the block succeeded, instead of being committed or discarded here
        self.deferred: dict[StepKey, Callable[[bool], None]] = {}

    def __enter__(self) -> StepTransaction:
        # Nested blocks (Lightning's ``_atomic_save`` inside o41's save of a Lightning step)
        # join the outermost one, which alone commits.
        self.depth += 1
        if self.depth == 1:
            self.start()
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        self.depth -= 1
        if exc_type is not None and self.depth > 0:
            self.failed = True
        if self.depth == 0:
            failed, self.failed = self.failed, False
            self.complete(commit=exc_type is None and not failed)

    def start(self) -> None:
        self.files = deque()
        self.steps = set()
        self.deferred = {}
        self.fs._intrans = True

    def complete(self, commit: bool = True) -> None:
        fs: O41FileSystem = self.fs
        files, self.files = list(self.files), deque()
        keys, self.steps = set(self.steps), set()
        deferred, self.deferred = dict(self.deferred), {}
        try:
            for f in files:
                keys.add(f.key)
                if commit:
                    f.close()
                else:
                    f.discard()
            for key in sorted(keys - deferred.keys()):
                if commit:
                    fs._commit_step(key)
                else:
                    fs._staging.discard(key)
        except BaseException:
            commit = False
            for key in keys - deferred.keys():  # steps not committed yet go with the failed one
                fs._staging.discard(key)
            raise
        finally:
            for later in deferred.values():
                later(commit)
            self.root_step = None
            fs._intrans = False
            fs._transaction = None


__all__ = ["DEFAULT_MARKERS", "DEFAULT_PARTS", "Staging", "Step", "StepTransaction",
           "UncommittedWarning", "WriteFile", "is_marker", "is_part", "reclaim_dead",
           "shared_staging", "warn_uncommitted"]
