"""What commits a step written under ``o41://P/N/step-XXXXXXXX/``, and when.

The contract commits a version as one record, after all its files are uploaded (the commit
goes last: nothing of a step is visible until its writer says it is done, and a writer that
dies first leaves nothing). fsspec writers, though, open and close files one at a time. So
each written file streams into its step's upload as it is written (``o41.writing.stream``), and
the step waits for its commit signal: the end of a transaction, the end of a ``put``, or
the close of a marker file (torch DCP's ``.metadata``, Orbax's ``commit_success.txt``). A
step that never gets one is never visible (the service reclaims its upload), and is named
in an ``UncommittedWarning`` when the process exits.
"""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Callable
from typing import Protocol

from fsspec.transaction import Transaction

from o41.writing.launch import UncommittedWarning, uncommitted, warn_uncommitted

DEFAULT_MARKERS = (".metadata", "commit_success.txt")
# Files that are parts of a multi-file checkpoint: closing one waits for its marker (DCP's
# shards, and its ``.metadata.tmp`` before the rename onto ``.metadata``).
DEFAULT_PARTS = ("*.distcp", "*.tmp")
# Files held in memory until renamed (a streamed file's name cannot change once sent).
HELD = ("*.tmp",)
StepKey = tuple[str, str]  # (artifact, version)


def is_marker(name: str, markers: tuple[str, ...]) -> bool:
    """A marker matches the file's name within the step or its base name (glob patterns)."""
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, m) or fnmatch.fnmatchcase(base, m) for m in markers)


is_part = is_marker  # the same matching, against the ``parts`` patterns


class StepCommitter(Protocol):
    """What a transaction asks of its filesystem: commit or drop a step, and to set fsspec's
    flags of a transaction in progress (its own attributes, set by its own method)."""

    def mark_transaction(self, open_: bool) -> None: ...

    def commit_step(self, key: StepKey) -> object: ...

    def discard_step(self, key: StepKey) -> None: ...


class StepTransaction(Transaction):
    """``with fs.transaction:``: the files of each step written inside become ONE version."""

    def __init__(self, fs: StepCommitter, **kwargs: object) -> None:
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

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
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
        self.fs.mark_transaction(True)

    def complete(self, commit: bool = True) -> None:
        fs: StepCommitter = self.fs
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
                    fs.commit_step(key)
                else:
                    fs.discard_step(key)
        except BaseException:
            commit = False
            for key in keys - deferred.keys():  # steps not committed yet go with the failed one
                fs.discard_step(key)
            raise
        finally:
            for later in deferred.values():
                later(commit)
            self.root_step = None
            fs.mark_transaction(False)


__all__ = ["DEFAULT_MARKERS", "DEFAULT_PARTS", "HELD", "StepKey", "StepTransaction",
           "UncommittedWarning", "is_marker", "is_part", "uncommitted", "warn_uncommitted"]
