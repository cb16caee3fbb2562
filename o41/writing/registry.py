"""The launch registry: one ``Launch`` (``o41.writing.launch``) per process and artifact, found
by every ``o41://`` filesystem instance of the process, and nothing else global.

Who is the launch: a job's whole process tree (``o41.job``). ``o41 run o41://P/N -- CMD``
opens before CMD starts and hands the open down in ``O41_RUN``: every process below it, by
fork, spawn, subprocess or exec through shells and wrappers, writes under that open and never
opens again. Without it, the first process of a job that writes opens and writes the open
down for the job (``o41.job.records``), and the others find it there. A rank of a distributed
job that was handed an upload through DCP's plan (``o41.adapters.dcp``) joins that upload: it holds
the token, never opens, and never commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from o41.checkpoint import Run
from o41.checkpoint import open as open_run
from o41.config import Place, Settings
from o41.errors import Fenced, NotFound
from o41.job import hooks, membership
from o41.job.records import JobRecords, Record
from o41.transport.api import ApiClient
from o41.writing.deferred import settle_all
from o41.writing.identity import (
    ENV_FENCE_CHECK,
    ENV_MODE,
    ENV_ON_FENCED,
    ENV_RUN,
    FENCE_CHECK,
    fence_check_every,
    handed_over,
    handoff,
    handoff_fields,
    mode_of,
    on_fenced_policy,
    parse_handoff,
    run_from_fields,
)
from o41.writing.launch import Launch, StepUpload, superseded, warn_uncommitted

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
        launch.after_fork()


def _settle_before_fork() -> None:
    """What this process closed is committed before a fork, so a forked reader sees it."""
    settle_all(all_launches(), quiet=True)


def _at_exit() -> None:
    """Steps whose files all closed commit; what is left is named as never committed."""
    settle_all(all_launches(), quiet=True)
    warn_uncommitted(all_launches())


hooks.in_forked_child(_after_fork_in_child)
hooks.before_fork(_settle_before_fork)
hooks.at_exit(_at_exit)
hooks.on_sigterm(lambda: settle_all(all_launches(), quiet=True))


# (API, artifact, holder) -> the newest version this process read before it opened
_read_before_open: dict[tuple[str, str, str], str] = {}


def note_read(api: ApiClient, artifact: str, holder: str, version: str) -> None:
    """A read of ``latest`` (or a listing) before this job opened ``artifact``: the job's
    later open (perhaps in another of its processes: DCP's checkpoint process) checks it."""
    key = (api.api_url, artifact, holder)
    with _lock:
        if key in _launches or not version.startswith("step-"):
            return
        if _read_before_open.get(key, "") >= version:
            return
        _read_before_open[key] = version
    records = JobRecords.of(membership.job(), create=True)
    if records is not None:
        records.note_read(api.api_url, artifact, version)


def read_before_open(api: ApiClient, artifact: str, holder: str) -> str | None:
    """The newest version this process, or another of its job, read before the job opened
    ``artifact``."""
    with _lock:
        mine = _read_before_open.get((api.api_url, artifact, holder))
    records = JobRecords.of(membership.job(), create=False)
    theirs = records.read(api.api_url, artifact).get("read") if records is not None else None
    return max(filter(None, (mine, str(theirs or ""))), default=None)


def moved_since_job_read(api: ApiClient, artifact: str, holder: str) -> bool:
    """Whether this job read ``artifact`` before opening it (in this process or another of
    the job: DCP's ranks read, its checkpoint process writes) and its ``latest`` moved since:
    a box that still held it committed meanwhile. The job's open comes first then, before
    the refusal a write of an existing step would get: it fences that box and stops this
    job (``moved_since_read``), and ``version_exists`` would blame the trainer."""
    if launch_if_held(api, artifact, holder) is not None:
        return False
    read = read_before_open(api, artifact, holder)
    if read is None:
        return False
    try:
        latest = api.read_artifact(artifact).get("latest")
    except NotFound:
        return False
    return bool(latest) and str(latest) > read


def shared_launch(api: ApiClient, artifact: str, *, resume: str | None, settings: Settings,
                  place: Place | None, holder: str, workers: int, on_fenced: str) -> Launch:
    """The process's launch of ``artifact``: handed over by ``o41 run``, shared by its job,
    or opened now, once."""
    key = (api.api_url, artifact, holder)
    with _lock:
        launch = _launches.get(key)
        if launch is None:
            def open_now() -> Run:
                return open_run(f"o41://{artifact}", resume=resume, settings=settings,
                                api=api, place=place, holder=holder, workers=workers)

            run = handed_over(api, artifact, holder, workers=workers)
            if run is not None:
                launch = Launch(run, on_fenced)
            elif holder != settings.holder:  # a holder of its own: not the job's launch
                launch = Launch(open_now(), on_fenced)
                _stop_if_moved(launch, _read_before_open.pop(key, None))
            else:
                launch = _job_launch(api, artifact, key, open_now, on_fenced, workers)
            _launches[key] = launch
            launch.watch()
    launch.check()
    return launch


def _job_launch(api: ApiClient, artifact: str, key: tuple[str, str, str],
                open_now: Callable[[], Run], on_fenced: str, workers: int) -> Launch:
    """The job's launch of ``artifact`` (``o41.job``): an ancestor's or this job's open when
    one exists, else opened now and written down for the job's other processes."""
    for name in membership.ancestor_jobs():
        above = JobRecords.of(name, create=False)
        found = above.read(api.api_url, artifact) if above is not None else {}
        if found.get("open"):
            return _joined(api, found, on_fenced, workers)
    records = JobRecords.of(membership.job(), create=True)
    read = _read_before_open.pop(key, None)
    if records is None:
        launch = Launch(open_now(), on_fenced)
        _stop_if_moved(launch, read)
        return launch
    with records.locked(api.api_url, artifact):
        found = records.read(api.api_url, artifact)
        if found.get("open"):
            return _joined(api, found, on_fenced, workers)
        run = open_now()
        read = max(filter(None, (read, str(found.get("read") or ""))), default=None)
        moved = moved_since_read(run, read) if read else None
        records.write(api.api_url, artifact, {
            "open": handoff_fields(run), "read": read,
            "stopped": str(moved) if moved is not None else None})
    launch = Launch(run, on_fenced)
    if moved is not None:
        raise launch.fenced(moved)
    return launch


def _joined(api: ApiClient, found: Record, on_fenced: str, workers: int) -> Launch:
    """A launch under an open another process of the job made."""
    fields = found["open"]
    assert isinstance(fields, dict)
    launch = Launch(run_from_fields(api, fields, workers=workers), on_fenced)
    stopped = found.get("stopped")
    if stopped:
        run = launch.run
        raise launch.fenced(Fenced(str(stopped), status=409, artifact=run.artifact,
                                   epoch=run.epoch, by_holder=None, by_epoch=run.epoch))
    return launch


def _stop_if_moved(launch: Launch, read: str | None) -> None:
    moved = moved_since_read(launch.run, read) if read else None
    if moved is not None:
        raise launch.fenced(moved)


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


def forget_launches() -> None:
    """Forget every launch of this process and what it read before opening, as a test does
    after it resets the emulator they wrote to (the ``o41_emulator`` fixture): their steps
    are dropped uncommitted, their fence watches end, and the next write opens anew."""
    with _lock:
        launches = list(_launches.values())
        _launches.clear()
        _read_before_open.clear()
    for launch in launches:
        launch.retire()


def launch_if_held(api: ApiClient, artifact: str, holder: str) -> Launch | None:
    """The launch's state of ``artifact`` when it has opened one (a reader has none)."""
    with _lock:
        return _launches.get((api.api_url, artifact, holder))


def all_launches() -> list[Launch]:
    with _lock:
        return list(_launches.values())


def launches_of(api_url: str, holder: str) -> list[Launch]:
    """Every launch of this process for one API and holder (one per artifact)."""
    with _lock:
        return [v for (url, _, h), v in _launches.items() if (url, h) == (api_url, holder)]


def joined_launch(api: ApiClient, artifact: str, holder: str, *, token: str, epoch: int,
                  version: str, upload: str, on_fenced: str, place: Place | None = None,
                  workers: int = 8) -> Launch:
    """This process's part in an upload its job's coordinator started (``o41.adapters.dcp``): the
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
           "StepUpload", "all_launches", "fence_check_every", "forget_launches", "handed_over",
           "handoff", "joined_launch", "launch_if_held", "launches_of", "mode_of",
           "moved_since_job_read", "moved_since_read", "note_read", "on_fenced_policy",
           "parse_handoff", "shared_launch", "superseded"]
