"""A step of files closed one at a time is ONE version: committed soon after its last close.

A plain training loop saves a step as several files, each closed before the next opens:
``torch.save(model, fsspec.open(".../step-00000100/model.pt", "wb"))`` and then
``optim.pt``; safetensors and then a json; ``UPath.write_bytes`` twice. Nothing says which
file is the last. Committing at each close would make the first file the whole version, and
the second would be refused (``version_exists``) at every relaunch for good. So a closed
file's step waits ``O41_COMMIT_AFTER`` seconds (storage option ``commit_after``, default 5)
with no file of it open, then commits as one version. It commits at once when:

- this process writes into another step of the artifact (the next step's first open);
- this process reads, lists or removes in the artifact (read-your-writes: it sees its own
  step whole), except a path in the step that names a file not written yet (an ``exists``
  before the step's next file must not commit it);
- the process exits: normally, on an uncaught exception (``atexit``), or on SIGTERM, the
  notice a spot box gets before it is taken;
- ``fs.commit_pending()`` is called.

A kill -9 before then leaves the previous step as ``latest``, never half a step. Five
seconds: the code between two saves of one step (an optimizer's ``state_dict``, a json of
the step's metadata) takes far less, while a shorter wait risks committing half a step,
which no relaunch can mend; a longer one only delays what other processes see. Markers
(DCP's ``.metadata``), ``put``, ``pipe`` of many files, transactions and a Lightning fit's
steps commit as they always did: they say when a step ends.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from o41.errors import ConfigError
from o41.job import hooks

# ``o41.writing.launch.Launch``, which owns a ``DueSteps`` (named
# so, not imported: that module imports this one)
Launch = Any

log = logging.getLogger("o41")

ENV_COMMIT_AFTER = "O41_COMMIT_AFTER"
COMMIT_AFTER = 5.0
COMMIT_AFTER_MAX = 600.0


def commit_after(value: float | str | None = None, env: Mapping[str, str] | None = None) -> float:
    """Seconds a step waits after its last close; 0 commits at each close."""
    env = os.environ if env is None else env
    source = "commit_after"
    if value is None:
        value, source = env.get(ENV_COMMIT_AFTER, "").strip() or COMMIT_AFTER, ENV_COMMIT_AFTER
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 <= seconds <= COMMIT_AFTER_MAX:
        raise ConfigError(f"{source}={value!r} must be a number of seconds in "
                          f"0..{COMMIT_AFTER_MAX:g} (0 commits a step at each close)")
    return seconds


class DueSteps:
    """One launch's steps whose files are all closed, each with its deadline and commit."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.reset()

    def reset(self) -> None:
        """Fresh state (also in a forked child: the parent's steps are the parent's)."""
        self.cond = threading.Condition(threading.RLock())  # a SIGTERM handler re-enters
        self.due: dict[str, tuple[float, Callable[[], Any]]] = {}
        self.failed: dict[str, BaseException] = {}
        self.pid = os.getpid()
        self._timer = False

    def defer(self, version: str, after: float, commit: Callable[[], Any]) -> None:
        """Commit ``version`` by calling ``commit`` once ``after`` seconds pass unless a
        file of it opens again (its close defers it anew)."""
        with self.cond:
            self.due[version] = (time.monotonic() + after, commit)
            if not self._timer:
                self._timer = True
                threading.Thread(target=self._wait, daemon=True,
                                 name=f"o41-commit-after-{self.launch.artifact}").start()
            self.cond.notify_all()
        hooks.catch_sigterm()

    def cancel(self, version: str) -> None:
        with self.cond:
            self.due.pop(version, None)

    def pending(self) -> list[str]:
        with self.cond:
            return sorted(self.due)

    def settle(self, spare: Callable[[str], bool] = lambda version: False) -> None:
        """Commit now, in this thread, every due step ``spare`` does not spare; the first
        commit that failed, here or in the background since, is raised after the others
        are done, for the caller to see."""
        with self.cond:
            failed = list(self.failed.values())
            self.failed = {}
            chosen = [(v, c) for v, (_, c) in sorted(list(self.due.items()))
                      if not spare(v) and not self._open(v)]
            for version, _ in chosen:
                self.due.pop(version, None)
        for _, commit in chosen:
            try:
                commit()
            except BaseException as exc:
                failed.append(exc)
        if failed:
            raise failed[0]

    def _open(self, version: str) -> bool:
        with self.launch.lock:
            step = self.launch.steps.get(version)
            return step is not None and bool(step.writing)

    def _wait(self) -> None:
        """The timer: commits each step at its deadline, in the background."""
        pid = os.getpid()
        while True:
            with self.cond:
                if os.getpid() != pid:
                    return
                now = time.monotonic()
                ready = [(v, c) for v, (t, c) in sorted(list(self.due.items())) if t <= now]
                for version, _ in ready:
                    self.due.pop(version, None)
                if not ready:
                    first = min((t for t, _ in self.due.values()), default=None)
                    self.cond.wait(None if first is None else max(0.01, first - now))
                    continue
            for version, commit in ready:
                if self._open(version):
                    continue  # written again: its close defers it anew
                try:
                    commit()
                except BaseException as exc:  # told at the next settle, and logged now
                    log.warning("o41: o41://%s/%s was not committed: %s",
                                self.launch.artifact, version, exc)
                    with self.cond:
                        self.failed[version] = exc


def settle_all(launches: Iterable[Launch], *, quiet: bool = False) -> None:
    """Commit every due step of ``launches`` now (at exit, on SIGTERM, before a fork)."""
    for launch in launches:
        if launch.due.pid != os.getpid():
            continue  # a forked child's copy: the parent commits its steps
        try:
            launch.due.settle()
        except BaseException as exc:
            if not quiet:
                raise
            log.warning("o41: o41://%s: a step was not committed: %s", launch.artifact, exc)


__all__ = ["COMMIT_AFTER", "ENV_COMMIT_AFTER", "DueSteps", "commit_after", "settle_all"]
