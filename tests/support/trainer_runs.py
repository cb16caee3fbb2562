"""Real trainers (tests/support/trainers/*.py) as subprocesses: start, follow, pause, kill.

A trainer prints ``resumed-at N`` and ``step N`` lines; a test waits for lines, never for
time. Every wait is bounded and fails with what the trainer printed so far.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
TRAINERS = Path(__file__).resolve().parent / "trainers"
WAIT = 180.0  # seconds any one wait may take on a loaded machine before the test fails


@dataclass
class Trainer:
    """A running trainer and every line it has printed (stdout and stderr together)."""

    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)
    pump: threading.Thread | None = None

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        self.proc.stdout.close()
        with self.cond:
            self.cond.notify_all()

    def wait_line(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        """The first printed line matching ``pattern`` (waiting for it to come)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                for line in self.lines[seen:]:
                    if m := regex.search(line):
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and seen == len(self.lines):
                    if self.proc.poll() is not None:
                        self.proc.wait()
                    raise AssertionError(f"no line matching {pattern!r}; the trainer printed:"
                                         "\n" + "\n".join(self.lines[-40:]))
                self.cond.wait(min(left, 1.0))

    def finish(self, timeout: float = WAIT) -> int:
        """Wait for the trainer to end; its exit code, with every line it printed read."""
        code = self.proc.wait(timeout)
        if self.pump is not None:
            self.pump.join(30)
        return code

    def output(self) -> str:
        with self.cond:
            return "\n".join(self.lines)

    def pause(self) -> None:
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.finish(30)


def start(env: dict[str, str], script: str, *args: str, launcher: list[str] | None = None
          ) -> Trainer:
    """Start ``tests/support/trainers/<script>`` (under ``launcher``, e.g. ``o41 run LOC --``) in a
    process group of its own, so pausing or killing it takes the whole box."""
    command = [*(launcher or []), sys.executable, str(TRAINERS / script), *args]
    proc = subprocess.Popen(command, cwd=REPO, env={**env, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    trainer = Trainer(proc)
    trainer.pump = threading.Thread(target=trainer._pump, daemon=True)
    trainer.pump.start()
    _STARTED.append(trainer)
    return trainer


_STARTED: list[Trainer] = []


def end_leftover_trainers() -> None:
    """Kill every trainer a test started and left running: an assertion that fails between
    a ``pause()`` and its ``resume()`` would leave a stopped box behind for good."""
    while _STARTED:
        trainer = _STARTED.pop()
        if trainer.proc.poll() is None:
            try:
                os.killpg(trainer.proc.pid, signal.SIGCONT)
                os.killpg(trainer.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            trainer.proc.wait()


def o41_launcher(location: str) -> list[str]:
    return [str(Path(sys.executable).with_name("o41")), "run", location, "--"]


def versions(api: str, key: str, location: str) -> list[dict]:
    """The artifact's committed versions (step order), or [] when it does not exist."""
    resp = requests.get(f"{api}/versions/list", params={"artifact": location[6:]},
                        headers={"Authorization": f"Bearer {key}"}, timeout=30)
    if resp.status_code == 404:
        return []
    resp.raise_for_status()
    return resp.json()["versions"]


def artifact(api: str, key: str, location: str) -> dict:
    resp = requests.get(f"{api}/artifacts/read", params={"artifact": location[6:]},
                        headers={"Authorization": f"Bearer {key}"}, timeout=30)
    resp.raise_for_status()
    return resp.json()


def wait_for_version(api: str, key: str, location: str, step: int,
                     timeout: float = WAIT) -> list[dict]:
    """Poll the listing until a version of ``step`` or later is committed."""
    deadline = time.monotonic() + timeout
    while True:
        found = versions(api, key, location)
        if found and found[-1]["step"] >= step:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{location}: no version at step >= {step}: {found}")
        time.sleep(0.2)
