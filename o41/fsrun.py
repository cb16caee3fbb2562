"""One open per launch, and a fenced launch that stops.

A trainer's process may hold many ``o41://`` filesystem instances (fsspec keeps one per
thread and per set of options), but it is ONE launch: every instance of a process shares
the run opened for an artifact here, so a save from a helper thread never opens again and
fences its own main thread.

A launch that a newer one fenced must stop, not train on: Lightning's ``_atomic_save``
swallows the ``PermissionError`` a refused write raises, and a zombie would otherwise burn
its GPU to the end and exit 0. So a run opened here is watched: every ``O41_FENCE_CHECK``
seconds (default 2) the artifact's epoch is read, and a newer epoch, or a write refused as
``fenced``, ends the process with exit code 8 and one line naming the newer holder and
epoch. ``O41_ON_FENCED=raise`` (storage option ``on_fenced="raise"``) makes it raise
``o41.Fenced`` instead, for code that handles fencing itself. Nothing a fenced process
writes becomes visible either way: the service refuses its token (FENCE-2, FENCE-3).

``o41 run o41://P/N -- CMD`` opens before CMD starts and hands the open to it in
``O41_RUN`` (JSON), so any trainer, even one whose first touch of the artifact is a read,
is fenced at launch.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping

from .api import ApiClient
from .checkpoint import Run
from .checkpoint import open as open_run
from .config import Place, Settings
from .errors import ApiError, ConfigError, ExitCode, Fenced, TransportError
from .models import Version

log = logging.getLogger("o41")

ENV_RUN = "O41_RUN"
ENV_ON_FENCED = "O41_ON_FENCED"
ENV_FENCE_CHECK = "O41_FENCE_CHECK"
ON_FENCED = ("exit", "raise")
FENCE_CHECK = 2.0

# Keyed by (API, artifact, holder): a process is one launch with one holder; instances
# given other holders (storage option ``holder``) are other launches, as in tests.
_runs: dict[tuple[str, str, str], Run] = {}
_fenced: dict[tuple[str, str, str], Fenced] = {}
_keys: dict[int, tuple[str, str, str]] = {}  # id(run) -> its key (runs are not hashable)
_lock = threading.RLock()


def _forget_after_fork() -> None:
    """A forked child (a DataLoader worker) is not the launch: it holds no open, no watch."""
    global _lock
    _runs.clear()
    _fenced.clear()
    _keys.clear()
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_forget_after_fork)


def on_fenced_policy(value: str | None, env: Mapping[str, str] | None = None) -> str:
    """``exit`` (the default) or ``raise``, from the option or ``O41_ON_FENCED``."""
    env = os.environ if env is None else env
    policy = (value or env.get(ENV_ON_FENCED, "") or "exit").strip().lower()
    if policy not in ON_FENCED:
        raise ConfigError(f"on_fenced={policy!r} (or {ENV_ON_FENCED}) must be 'exit' or "
                          "'raise'")
    return policy


def fence_check_every(env: Mapping[str, str] | None = None) -> float:
    """Seconds between checks of a held artifact's epoch; 0 turns the watch off."""
    env = os.environ if env is None else env
    text = env.get(ENV_FENCE_CHECK, "").strip()
    if not text:
        return FENCE_CHECK
    try:
        every = float(text)
    except ValueError:
        every = -1.0
    if not 0 <= every <= 3600:
        raise ConfigError(f"{ENV_FENCE_CHECK}={text!r} must be a number of seconds in "
                          "0..3600 (0: no watch)")
    return every


def shared_run(api: ApiClient, artifact: str, *, resume: str | None, settings: Settings,
               place: Place | None, holder: str, workers: int, on_fenced: str) -> Run:
    """The process's run for ``artifact``: handed over by ``o41 run``, or opened now, once."""
    key = (api.api_url, artifact, holder)
    with _lock:
        stopped = _fenced.get(key)
        if stopped is not None:
            raise stopped
        run = _runs.get(key)
        if run is None:
            run = handed_over(api, artifact, holder, workers=workers) or open_run(
                f"o41://{artifact}", resume=resume, settings=settings, api=api, place=place,
                holder=holder, workers=workers)
            _runs[key] = run
            _keys[id(run)] = key
            every = fence_check_every()
            if every > 0:
                threading.Thread(target=_watch, args=(run, every, on_fenced), daemon=True,
                                 name=f"o41-fence-watch-{artifact}").start()
        return run


def shared_run_if_held(api: ApiClient, artifact: str, holder: str) -> Run | None:
    """The launch's run of ``artifact`` when it has opened one (a reader has none)."""
    with _lock:
        return _runs.get((api.api_url, artifact, holder))


def handed_over(api: ApiClient, artifact: str, holder: str, *, workers: int,
                env: Mapping[str, str] | None = None) -> Run | None:
    """The run ``o41 run`` opened for this process, when it is for this API and artifact
    (the launcher's holder is the child's: both read it from the same environment)."""
    env = os.environ if env is None else env
    text = env.get(ENV_RUN, "").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
        mine = (data["api_url"] == api.api_url and data["artifact"] == artifact
                and data["holder"] == holder)
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{ENV_RUN} is not the JSON `o41 run` writes: {exc}") from None
    if not mine:
        return None
    resume_from = None
    if data.get("resume_from"):
        resume_from = Version.from_json(api.read_version(artifact, data["resume_from"]))
    place = Place.parse(data["place"]) if data.get("place") else None
    return Run(api=api, artifact=artifact, epoch=int(data["epoch"]), token=data["token"],
               holder=data["holder"], place=place, resume_from=resume_from, workers=workers)


def handoff(run: Run) -> str:
    """What ``o41 run`` puts in ``O41_RUN`` for its child."""
    return json.dumps({"api_url": run.api.api_url, "artifact": run.artifact,
                       "epoch": run.epoch, "token": run.token, "holder": run.holder,
                       "place": str(run.place) if run.place else None,
                       "resume_from": run.resume_from.version if run.resume_from else None})


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


def fenced(run: Run, exc: Fenced, policy: str) -> Fenced:
    """Record that ``run`` is fenced; under ``exit``, end the process here and now.

    Returns the exception to raise under ``raise``. Exiting from any thread, at once, is the
    point: frameworks catch exceptions, and a fenced launch must not train on.
    """
    with _lock:
        _fenced.setdefault(_key(run), exc)
    if policy == "raise":
        return exc
    message = " ".join(str(exc).split())
    try:
        sys.stdout.flush()
        sys.stderr.write(f"o41: fenced: {message}; stopping this process (exit "
                         f"{int(ExitCode.FENCED)}; {ENV_ON_FENCED}=raise raises o41.Fenced "
                         "instead)\n")
        sys.stderr.flush()
    finally:
        os._exit(int(ExitCode.FENCED))


def check_not_fenced(run: Run) -> None:
    """Raise the recorded ``Fenced`` of ``run`` (under ``raise``, its writes stay refused)."""
    with _lock:
        stopped = _fenced.get(_key(run))
    if stopped is not None:
        raise stopped


def _key(run: Run) -> tuple[str, str, str]:
    return _keys.get(id(run), (run.api.api_url, run.artifact, run.holder))


def _watch(run: Run, every: float, policy: str) -> None:
    while True:
        time.sleep(every)
        with _lock:
            if _runs.get(_key(run)) is not run or _key(run) in _fenced:
                return
        exc = superseded(run)
        if exc is not None:
            fenced(run, exc, policy)
            return


__all__ = ["ENV_FENCE_CHECK", "ENV_ON_FENCED", "ENV_RUN", "check_not_fenced",
           "fence_check_every", "fenced", "handed_over", "handoff", "on_fenced_policy",
           "shared_run", "shared_run_if_held", "superseded"]
