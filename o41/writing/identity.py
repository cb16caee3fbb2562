"""Who the launch is, from the environment: ``O41_MODE``, ``O41_ON_FENCED``,
``O41_FENCE_CHECK``, and ``O41_RUN``, the open ``o41 run`` hands to the process it starts.

Kept apart from ``o41.writing.registry`` (the launch itself) so that what a variable
means is read in
one place; ``o41.writing.registry``'s docstring tells who is the launch and why.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from o41.checkpoint import Run
from o41.config import Place
from o41.errors import ConfigError
from o41.models import Version
from o41.transport.api import ApiClient

log = logging.getLogger("o41")

ENV_RUN = "O41_RUN"
ENV_ON_FENCED = "O41_ON_FENCED"
ENV_FENCE_CHECK = "O41_FENCE_CHECK"
ENV_MODE = "O41_MODE"
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
    """Who opens: the ``mode`` option, else ``O41_MODE``. ``write`` belongs to the job it was
    set for (``o41.job.membership``): its first touch of an artifact, by any of its
    processes, opens for all of them."""
    if value:
        mode, source = value.strip().lower(), "mode"
    else:
        env = os.environ if env is None else env
        mode, source = env.get(ENV_MODE, "").strip().lower() or "auto", ENV_MODE
    if mode not in MODES:
        raise ConfigError(f"{source}={mode!r} must be one of {', '.join(MODES)}")
    return mode


def handed_over(api: ApiClient, artifact: str, holder: str, *, workers: int,
                env: Mapping[str, str] | None = None) -> Run | None:
    """The run ``o41 run`` opened for its command, when it is for this API and artifact:
    every process below the launcher holds it, whoever started it."""
    env = os.environ if env is None else env
    text = env.get(ENV_RUN, "").strip()
    if not text:
        return None
    data = parse_handoff(text)
    if (data["api_url"], data["artifact"]) != (api.api_url, artifact):
        return None
    if data["holder"] != holder:
        return None  # an instance given a holder of its own is another launch
    return run_from_fields(api, data, workers=workers)


def run_from_fields(api: ApiClient, data: Mapping[str, object], *, workers: int) -> Run:
    """The ``Run`` an open's fields (``handoff_fields``) describe, without opening again."""
    resume_from = None
    if data.get("resume_from"):
        resume_from = Version.from_json(api.read_version(str(data["artifact"]),
                                                         str(data["resume_from"])))
    place = Place.parse(str(data["place"])) if data.get("place") else None
    epoch = data["epoch"]
    assert isinstance(epoch, int)
    return Run(api=api, artifact=str(data["artifact"]), epoch=epoch, token=str(data["token"]),
               holder=str(data["holder"]), place=place, resume_from=resume_from,
               workers=workers)


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


def handoff_fields(run: Run, launcher: int | None = None) -> dict[str, object]:
    """An open, as the processes of its job receive it."""
    return {"api_url": run.api.api_url, "artifact": run.artifact, "epoch": run.epoch,
            "token": run.token, "holder": run.holder,
            "place": str(run.place) if run.place else None,
            "resume_from": run.resume_from.version if run.resume_from else None,
            "launcher": os.getpid() if launcher is None else launcher}


def handoff(run: Run, launcher: int | None = None) -> str:
    """What ``o41 run`` puts in ``O41_RUN`` for its command (``launcher``: its own pid)."""
    return json.dumps(handoff_fields(run, launcher))


__all__ = ["ENV_FENCE_CHECK", "ENV_MODE", "ENV_ON_FENCED", "ENV_RUN", "FENCE_CHECK",
           "fence_check_every", "handed_over", "handoff", "handoff_fields", "mode_of",
           "on_fenced_policy", "parse_handoff", "run_from_fields"]
