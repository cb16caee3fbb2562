"""Who the launch is, from the environment: ``O41_MODE``, ``O41_ON_FENCED``,
``O41_FENCE_CHECK``, and ``O41_RUN``, the open ``o41 run`` hands to the process it starts.

Kept apart from ``o41.fsrun`` (the launch itself) so that what a variable means is read in
one place; ``o41.fsrun``'s docstring tells who is the launch and why.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from .api import ApiClient
from .checkpoint import Run
from .config import LAUNCH_PID, LAUNCH_PPID, Place
from .errors import ConfigError
from .models import Version

log = logging.getLogger("o41")

ENV_RUN = "O41_RUN"
ENV_ON_FENCED = "O41_ON_FENCED"
ENV_FENCE_CHECK = "O41_FENCE_CHECK"
ENV_MODE = "O41_MODE"
ENV_MODE_PID = "O41_MODE_PID"
ON_FENCED = ("exit", "raise")
MODES = ("auto", "write", "read")
FENCE_CHECK = 2.0
FENCE_CHECK_RANGE = (0.1, 3600.0)  # seconds; 0 turns the watch off


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
    low, high = FENCE_CHECK_RANGE
    if every != 0 and not low <= every <= high:
        raise ConfigError(f"{ENV_FENCE_CHECK}={text!r} must be 0 (no watch) or a number of "
                          f"seconds in {low:g}..{high:g}")
    return every


def mode_of(value: str | None, env: Mapping[str, str] | None = None) -> str:
    """Who opens: the ``mode`` option, else ``O41_MODE`` when it was set for this launch.

    ``O41_MODE`` is marked with the pid of the first launch that reads it (``O41_MODE_PID``),
    so a subprocess of that launch (its evaluation job) that inherits both is ``auto``; and
    in a ``torchrun`` job only global rank 0 honours ``write`` (the other ranks must never
    open: they would fence each other).
    """
    if value:
        mode = value.strip().lower()
        source = "mode"
    else:
        env = os.environ if env is None else env
        mode = env.get(ENV_MODE, "").strip().lower() or "auto"
        source = ENV_MODE
        if env is os.environ and mode != "auto" and ENV_MODE_PID not in os.environ:
            os.environ[ENV_MODE_PID] = str(LAUNCH_PID)
        mark = env.get(ENV_MODE_PID, "").strip()
        if mode == "write" and mark and mark != str(LAUNCH_PID):
            return "auto"  # inherited from the launch that set it: its subprocess reads
        if mode == "write" and env.get("RANK", "0").strip() not in ("", "0"):
            return "auto"
    if mode not in MODES:
        raise ConfigError(f"{source}={mode!r} must be one of {', '.join(MODES)}")
    return mode


def _launched_by(pid_text: str, env: Mapping[str, str]) -> bool:
    """Whether this launch is ``pid``'s own child, or a ``torchrun`` rank of its child."""
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if LAUNCH_PPID == pid:
        return True
    return bool(env.get("TORCHELASTIC_RUN_ID")) and _parent_of(LAUNCH_PPID) == pid


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def handed_over(api: ApiClient, artifact: str, holder: str, *, workers: int,
                env: Mapping[str, str] | None = None) -> Run | None:
    """The run ``o41 run`` opened for this process, when it is for this API and artifact,
    and this process is the one it launched (or a torchrun rank of it)."""
    env = os.environ if env is None else env
    text = env.get(ENV_RUN, "").strip()
    if not text:
        return None
    data = parse_handoff(text)
    launcher = data.get("launcher")
    if launcher is not None and not _launched_by(str(launcher), env):
        log.info("o41: %s was set by `o41 run` for another process; this one is its own "
                 "launch", ENV_RUN)
        return None
    if (data["api_url"], data["artifact"], data["holder"]) != (api.api_url, artifact, holder):
        return None
    resume_from = None
    if data.get("resume_from"):
        resume_from = Version.from_json(api.read_version(artifact, data["resume_from"]))
    place = Place.parse(data["place"]) if data.get("place") else None
    return Run(api=api, artifact=artifact, epoch=data["epoch"], token=data["token"],
               holder=data["holder"], place=place, resume_from=resume_from, workers=workers)


def parse_handoff(text: str) -> dict[str, Any]:
    """``O41_RUN``'s JSON, checked field by field: a bad value is a ``ConfigError``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{ENV_RUN} is not the JSON `o41 run` writes: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{ENV_RUN} is not the JSON object `o41 run` writes")
    for name, kind in (("api_url", str), ("artifact", str), ("token", str), ("holder", str),
                       ("epoch", int)):
        value = data.get(name)
        if not isinstance(value, kind) or isinstance(value, bool) or value == "":
            raise ConfigError(f"{ENV_RUN}: {name!r} is missing or not a {kind.__name__}: "
                              "set it with `o41 run`, or unset it")
    for name in ("place", "resume_from"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise ConfigError(f"{ENV_RUN}: {name!r} must be a string or null")
    launcher = data.get("launcher")
    if launcher is not None and (not isinstance(launcher, int) or isinstance(launcher, bool)):
        raise ConfigError(f"{ENV_RUN}: 'launcher' must be a pid")
    return data


def handoff(run: Run, launcher: int | None = None) -> str:
    """What ``o41 run`` puts in ``O41_RUN`` for its child (``launcher``: its own pid)."""
    return json.dumps({"api_url": run.api.api_url, "artifact": run.artifact,
                       "epoch": run.epoch, "token": run.token, "holder": run.holder,
                       "place": str(run.place) if run.place else None,
                       "resume_from": run.resume_from.version if run.resume_from else None,
                       "launcher": os.getpid() if launcher is None else launcher})


__all__ = ["ENV_FENCE_CHECK", "ENV_MODE", "ENV_MODE_PID", "ENV_ON_FENCED", "ENV_RUN",
           "FENCE_CHECK", "fence_check_every", "handed_over", "handoff", "mode_of",
           "on_fenced_policy", "parse_handoff"]
