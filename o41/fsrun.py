"""The launch registry: one ``Launch`` (``o41.fslaunch``) per process and artifact, found
by every ``o41://`` filesystem instance of the process, and nothing else global.

Who is the launch: ``o41 run o41://P/N -- CMD`` opens before CMD starts and hands the open
to it in ``O41_RUN`` (JSON, naming the launcher's pid), and ``O41_MODE=write`` is marked
with the pid it was set for (``O41_MODE_PID``). Both apply to that process, its forks and,
under ``torchrun``, its ranks; not to an unrelated subprocess, such as the trainer's own
evaluation job, which reads. A rank of a distributed job that was handed an upload through
DCP's plan (``o41.dcp``) joins that upload: it holds the token, never opens, and never
commits.
"""

from __future__ import annotations

import os
import threading

from .api import ApiClient
from .checkpoint import Run
from .checkpoint import open as open_run
from .config import Place, Settings
from .errors import Fenced
from .fsdefer import exit_hook_in_child, launches_from
from .fsidentity import (
    ENV_FENCE_CHECK,
    ENV_MODE,
    ENV_ON_FENCED,
    ENV_RUN,
    FENCE_CHECK,
    fence_check_every,
    handed_over,
    handoff,
    mode_of,
    on_fenced_policy,
    parse_handoff,
)
from .fslaunch import Launch, StepUpload, superseded

# Keyed by (API, artifact, holder): a process is one launch with one holder; instances
# given other holders (storage option ``holder``) are other launches, as in tests.
_launches: dict[tuple[str, str, str], Launch] = {}
_lock = threading.RLock()


def _after_fork_in_child() -> None:
    """A forked child is the same launch: it keeps the opens, with fresh locks (a lock some
    other thread held at the fork would never be released), and its own fence watch."""
    global _lock
    _lock = threading.RLock()
    _read_before_open.clear()
    for launch in _launches.values():
        launch.lock = threading.RLock()
        launch.due.reset()
        launch._watching = False
        with launch.lock:
            for step in launch.steps.values():
                step.writing.clear()  # the parent's open files are the parent's
        if launch.stopped is None:
            launch.watch()
    exit_hook_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


# (API, artifact, holder) -> the newest version this process read before it opened
_read_before_open: dict[tuple[str, str, str], str] = {}


def note_read(api: ApiClient, artifact: str, holder: str, version: str) -> None:
    """A read of ``latest`` (or a listing) before this process opened ``artifact``."""
    key = (api.api_url, artifact, holder)
    with _lock:
        if key not in _launches and version.startswith("step-"):
            _read_before_open[key] = max(version, _read_before_open.get(key, version))


def shared_launch(api: ApiClient, artifact: str, *, resume: str | None, settings: Settings,
                  place: Place | None, holder: str, workers: int, on_fenced: str) -> Launch:
    """The process's launch of ``artifact``: handed over by ``o41 run``, or opened now, once."""
    key = (api.api_url, artifact, holder)
    with _lock:
        launch = _launches.get(key)
        if launch is None:
            run = handed_over(api, artifact, holder, workers=workers)
            opened = run is None
            if run is None:
                run = open_run(f"o41://{artifact}", resume=resume, settings=settings, api=api,
                               place=place, holder=holder, workers=workers)
            launch = _launches[key] = Launch(run, on_fenced)
            read = _read_before_open.pop(key, None)
            if opened and read is not None:
                moved = moved_since_read(run, read)
                if moved is not None:
                    raise launch.fenced(moved)
            launch.watch()
    launch.check()
    return launch


def moved_since_read(run: Run, read: str) -> Fenced | None:
    """The refusal of a launch whose first act was a read: when the latest it opened on is
    newer than what it read, a box that still held the artifact committed in between (a
    zombie woken after this relaunch read its checkpoint), and this process trains from an
    older state; its first save would be refused as ``version_exists`` at best."""
    now = run.resume_from.version if run.resume_from else None
    if now is None or now <= read:
        return None
    by = (run.fenced or {}).get("holder")
    where = f"o41://{run.artifact}"
    return Fenced(
        f"{where}: this process read {read}, and then {f'holder {by!r}' if by else 'another box'} "
        f"committed {now} before this process opened the artifact to write: it trains from "
        f"an older state, so it stops before it writes, and a relaunch resumes from {now}; "
        f"start the trainer with `o41 run {where} -- CMD` or O41_MODE=write, which open (and "
        "fence the old box) before the first read", status=409, artifact=run.artifact,
        epoch=run.epoch, by_holder=by, by_epoch=run.epoch)


def launch_if_held(api: ApiClient, artifact: str, holder: str) -> Launch | None:
    """The launch's state of ``artifact`` when it has opened one (a reader has none)."""
    with _lock:
        return _launches.get((api.api_url, artifact, holder))


def all_launches() -> list[Launch]:
    with _lock:
        return list(_launches.values())


launches_from(all_launches)


def launches_of(api_url: str, holder: str) -> list[Launch]:
    """Every launch of this process for one API and holder (one per artifact)."""
    with _lock:
        return [v for (url, _, h), v in _launches.items() if (url, h) == (api_url, holder)]


def joined_launch(api: ApiClient, artifact: str, holder: str, *, token: str, epoch: int,
                  version: str, upload: str, on_fenced: str, place: Place | None = None,
                  workers: int = 8) -> Launch:
    """This process's part in an upload its job's coordinator started (``o41.dcp``): the
    token it was handed, the upload, and a fence watch; no open."""
    key = (api.api_url, artifact, holder)
    with _lock:
        launch = _launches.get(key)
        if launch is None or launch.token != token:
            run = Run(api=api, artifact=artifact, epoch=epoch, token=token, holder=holder,
                      place=place, resume_from=None, workers=workers)
            launch = _launches[key] = Launch(run, on_fenced, joined=True)
            launch.watch()
    launch.check()
    launch.join(version, upload)
    return launch


__all__ = ["ENV_FENCE_CHECK", "ENV_MODE", "ENV_ON_FENCED", "ENV_RUN", "FENCE_CHECK", "Launch",
           "StepUpload", "all_launches", "fence_check_every", "handed_over", "handoff",
           "joined_launch", "launch_if_held", "launches_of", "mode_of", "on_fenced_policy",
           "moved_since_read", "note_read", "parse_handoff", "shared_launch", "superseded"]
