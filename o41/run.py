"""``o41 run o41://P/N -- CMD``: open before the trainer starts, hold the open for it.

A trainer whose first touch of its artifact is a read (``dcp.load(".../latest")``) cannot
be told from an evaluation job by what it does, so it cannot fence at its first touch. The
launcher says it for it: it opens the artifact (fencing the previous box) before ``CMD``
starts, hands the open down in ``O41_RUN`` (every process below it uses it, through shells
and wrappers, at any depth: no second open), and watches the artifact. When a newer launch
fences this one, the launcher stops ``CMD`` (SIGTERM, then SIGKILL after a grace) and exits
8 with one line naming the newer holder and epoch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence

from o41.checkpoint import Run
from o41.checkpoint import open as open_run
from o41.config import ENV_HOLDER, Settings
from o41.errors import ConfigError, ExitCode
from o41.job import hooks
from o41.writing import registry

GRACE = 10.0  # seconds a fenced trainer gets between SIGTERM and SIGKILL
ENV_RESUME_FROM = "O41_RESUME_FROM"


def child_env(run: Run, base: dict[str, str] | None = None) -> dict[str, str]:
    """The trainer's environment: the held open, and what it resumes from."""
    env = dict(os.environ if base is None else base)
    env[registry.ENV_RUN] = registry.handoff(run)
    env[ENV_HOLDER] = run.holder
    env[ENV_RESUME_FROM] = (f"{run.location}/{run.resume_from.version}"
                            if run.resume_from else "")
    return env


def opened_line(run: Run) -> str:
    fenced = (f", fencing holder {run.fenced.get('holder')!r} (epoch {run.fenced.get('epoch')})"
              if run.fenced else "")
    start = (f"resuming from {run.resume_from.version}" if run.resume_from
             else "starting with no checkpoint")
    return f"o41 run: opened {run.location} at epoch {run.epoch}{fenced}; {start}"


def launch(location: str, resume: str | None, command: Sequence[str]) -> int:
    """Open, run ``command`` with the open, and return its exit code (8 when fenced)."""
    settings = Settings.from_env()
    run = open_run(location, resume=resume, settings=settings)
    print(opened_line(run), file=sys.stderr, flush=True)
    try:
        child = subprocess.Popen(list(command), env=child_env(run))
    except OSError as exc:
        raise ConfigError(f"cannot start {command[0]!r}: {exc.strerror}") from None
    stop = threading.Event()
    fenced: list[str] = []

    hooks.forward_signals(child.send_signal)
    every = registry.fence_check_every() or registry.FENCE_CHECK
    watcher = threading.Thread(target=_watch, args=(run, child, every, stop, fenced),
                               daemon=True)
    watcher.start()
    code = child.wait()
    stop.set()
    if fenced:
        print(f"o41 run: fenced: {fenced[0]}; stopped the trainer (exit "
              f"{int(ExitCode.FENCED)})", file=sys.stderr, flush=True)
        return int(ExitCode.FENCED)
    return code if code >= 0 else 128 - code


def _watch(run: Run, child: subprocess.Popen[bytes], every: float, stop: threading.Event,
           fenced: list[str]) -> None:
    while not stop.wait(every):
        exc = registry.superseded(run)
        if exc is None:
            continue
        fenced.append(" ".join(str(exc).split()))
        child.terminate()
        try:
            child.wait(GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
        return


__all__ = ["child_env", "launch", "opened_line"]
