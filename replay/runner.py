"""Run a command as each box of a scenario against a fresh emulator, preempting it.

Each box gets a fresh working directory (nothing on local disk survives a preemption, as on
a new spot box), ``SKYPILOT_CLUSTER_INFO`` for its place, the scenario's one
``SKYPILOT_TASK_ID`` (SkyPilot keeps it across recoveries), ``SKYPILOT_NODE_RANK=0``, and an
API URL that goes through the recording proxy. Boxes run one after another; a box preempted
with ``mode: stop`` stays stopped (a zombie) until its ``resume_after`` is met, then gets
SIGCONT and runs beside the newer box.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from emulator.run.served import EmulatorDidNotStart, ServedEmulator

from .proxy import Call, Recorder, RecordingProxy
from .scenario import Box, Scenario

START_TIMEOUT = 30.0
POLL = 0.05
TAIL_LINES = 8


class HarnessError(RuntimeError):
    """The scenario could not be run at all (emulator did not start, no artifact opened)."""


@dataclass
class BoxRun:
    """What happened to one box's process."""

    box: Box
    log: Path
    process: subprocess.Popen[bytes]
    launched: float
    ended: float | None = None
    returncode: int | None = None
    preempted: str | None = None
    preempted_at: float | None = None
    continued_at: float | None = None
    timed_out: bool = False

    def signal(self, sig: int) -> None:
        """Signal the box's whole process group (the command may have children)."""
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def poll(self) -> bool:
        """True once the process has exited (and records when)."""
        if self.returncode is None and self.process.poll() is not None:
            self.returncode, self.ended = self.process.returncode, time.monotonic()
        return self.returncode is not None


@dataclass
class Replay:
    """Everything the checks look at: the boxes, the call log, and the service's final view."""

    scenario: Scenario
    runs: list[BoxRun]
    calls: list[Call]
    artifact: str
    history: list[dict[str, Any]]
    usage: dict[str, Any] | None
    workdir: Path
    notes: list[str] = field(default_factory=list)


class Emulator(ServedEmulator):
    """The scenario's fresh emulator, with the reads the checks make of it."""

    def get(self, path: str, **params: str) -> requests.Response:
        return requests.get(f"{self.api_url}{path}", params=params, timeout=30,
                            headers=self.auth)


def start_emulator(data_dir: Path, extra: Sequence[str] = ()) -> Emulator:
    """``o41-emulator serve --port 0`` on `data_dir`, healthy, or a HarnessError."""
    emu = Emulator("--data-dir", str(data_dir), *extra, start_timeout=START_TIMEOUT)
    try:
        return emu.start()
    except EmulatorDidNotStart as exc:
        raise HarnessError(str(exc)) from None


def absolute_args(command: Sequence[str], cwd: Path) -> list[str]:
    """Make arguments that name existing relative paths absolute (boxes run elsewhere).

    A module name after ``-m`` stays as it is, even where a folder of that name exists
    (``python -m o41 run ...`` from a checkout).
    """
    # abspath, not resolve(): a venv's python is a symlink that must stay one
    return [os.path.abspath(cwd / a) if not os.path.isabs(a) and (cwd / a).exists()
            and (i == 0 or command[i - 1] != "-m") else a for i, a in enumerate(command)]


class Runner:
    """Launches, preempts and relaunches the boxes; one instance per replay."""

    def __init__(self, scenario: Scenario, command: Sequence[str], workdir: Path, *,
                 timeout: float, log: Callable[[str], None]) -> None:
        self.scenario = scenario
        self.command = absolute_args(command, Path.cwd())
        self.workdir = workdir
        self.timeout = timeout
        self.log = log
        self.task_id = f"sky-replay-{secrets.token_hex(4)}"
        self.recorder = Recorder(self.on_call)
        self.runs: list[BoxRun] = []
        self.current: BoxRun | None = None
        self.lock = threading.RLock()

    def env(self, box: Box, api_url: str, key: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SKYPILOT_", "O41_"))}
        info = box.cluster_info()
        if info is not None:
            env["SKYPILOT_CLUSTER_INFO"] = json.dumps(info)
        env.update(SKYPILOT_TASK_ID=self.task_id, SKYPILOT_NODE_RANK="0",
                   O41_ARTIFACTS_API_URL=api_url, O41_ARTIFACTS_API_KEY=key,
                   O41_REPLAY_BOX=box.id, PYTHONUNBUFFERED="1")
        return env

    def launch(self, box: Box, proxy: RecordingProxy, key: str) -> BoxRun:
        home = self.workdir / f"box-{box.id}"
        home.mkdir(parents=True, exist_ok=True)
        log = self.workdir / f"box-{box.id}.log"
        env = self.env(box, proxy.api_url(box.id), key)
        with log.open("wb") as out:
            try:
                proc = subprocess.Popen(self.command, cwd=home, env=env, stdout=out,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
            except OSError as exc:
                raise HarnessError(f"cannot run {self.command[0]!r}: {exc}") from None
        self.log(f"launch {box.id} at {box.place or 'an unknown place'} (pid {proc.pid})")
        return BoxRun(box, log, proc, time.monotonic())

    def _zombies(self, now: float) -> None:
        """SIGCONT stopped boxes whose ``resume_after`` is met; reap exited ones."""
        for run in self.runs:
            run.poll()
            p = run.box.preempt
            if run.preempted != "stop" or run.continued_at is not None or not p:
                continue
            after = p.resume_after
            if after is None:
                continue
            due = (after.seconds is not None and now - (run.preempted_at or now) >= after.seconds
                   or after.box is not None and any(r.box.id == after.box for r in self.runs)
                   and (self.recorder.calls_of(after.box) >= after.calls if after.calls
                        else self.recorder.checkpoints(after.box) >= after.checkpoints))
            if due:
                self._continue(run, now)

    def _continue(self, run: BoxRun, now: float) -> None:
        run.signal(signal.SIGCONT)
        run.continued_at = now
        self.log(f"SIGCONT {run.box.id}: the zombie runs again")

    def on_call(self, call: Call) -> None:
        """Proxy hook, before the box hears the reply: exact call- and checkpoint-count
        triggers (a zombie woken at a relaunch's first call runs before that call returns)."""
        with self.lock:
            self._zombies(time.monotonic())
            if call.op != "commit" or not call.ok:
                return
            run = self.current
            p = run.box.preempt if run is not None else None
            if (run is None or p is None or p.after_checkpoints is None or run.preempted
                    or call.box != run.box.id):
                return
            done = self.recorder.checkpoints(run.box.id)
            if done >= p.after_checkpoints:
                self.preempt(run, p.mode, done)

    def supervise(self, run: BoxRun) -> None:
        """Wait until ``run`` exits, is preempted, or times out; meanwhile mind the zombies."""
        p = run.box.preempt
        while True:
            with self.lock:
                now = time.monotonic()
                self._zombies(now)
                if run.preempted:
                    return
                if run.poll():
                    self.log(f"{run.box.id} exited with {run.returncode}"
                             + self.crashed_early(run))
                    return
                if p and p.after_seconds is not None and now - run.launched >= p.after_seconds:
                    self.preempt(run, p.mode, self.recorder.checkpoints(run.box.id))
                    return
                if now - run.launched > self.timeout:
                    run.timed_out = True
                    self.preempt(run, "kill", self.recorder.checkpoints(run.box.id))
                    return
            self.recorder.wait(POLL)

    def crashed_early(self, run: BoxRun) -> str:
        """For a box that exited non-zero before any API call: the tail of its log, else ""."""
        if run.preempted or run.returncode in (0, None):
            return ""
        if any(c.box == run.box.id for c in self.recorder.snapshot()):
            return ""
        return (f" before making any API call; the last lines of {run.log}:\n"
                + log_tail(run.log))

    def preempt(self, run: BoxRun, mode: str, done: int) -> None:
        run.preempted, run.preempted_at = mode, time.monotonic()
        if mode == "stop":
            run.signal(signal.SIGSTOP)
            self.log(f"SIGSTOP {run.box.id} after {done} checkpoints: it lives on as a zombie")
            return
        run.signal(signal.SIGKILL)
        run.process.wait()
        run.poll()
        why = "timed out" if run.timed_out else f"after {done} checkpoints"
        self.log(f"SIGKILL {run.box.id} {why}")

    def finish(self) -> None:
        """Continue zombies never continued, then wait (bounded) for every process to exit."""
        with self.lock:
            self.current = None
            for run in self.runs:
                if run.preempted == "stop" and run.continued_at is None and not run.poll():
                    self._continue(run, time.monotonic())
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with self.lock:
                if all(r.poll() for r in self.runs):
                    break
            self.recorder.wait(POLL)
        for run in self.runs:
            if not run.poll():
                run.timed_out = True
                run.signal(signal.SIGKILL)
                run.process.wait()
                run.poll()
                self.log(f"SIGKILL {run.box.id}: still running {self.timeout:.0f}s after the end")

    def run(self, emulator: Emulator, artifact: str | None) -> Replay:
        with RecordingProxy(emulator.url, self.recorder) as proxy:
            try:
                for box in self.scenario.boxes:
                    with self.lock:
                        run = self.launch(box, proxy, emulator.key)
                        self.runs.append(run)
                        self.current = run
                    self.supervise(run)
                    if self.crashed_early(run):  # the next box would fail the same way
                        self.log(f"{box.id} failed before it opened: the boxes after it "
                                 "are not launched")
                        break
                self.finish()
            finally:
                for run in self.runs:
                    if not run.poll():
                        run.signal(signal.SIGCONT)
                        run.signal(signal.SIGKILL)
                        run.process.wait()
        calls = self.recorder.snapshot()
        crashed = [r for r in self.runs if self.crashed_early(r)]
        if artifact is None and crashed and not any(c.op == "open" for c in calls):
            first = crashed[0]
            raise HarnessError(f"no box opened an artifact: box {first.box.id} exited with "
                               f"{first.returncode}{self.crashed_early(first)}")
        artifact = artifact or infer_artifact(calls)
        return Replay(self.scenario, self.runs, calls, artifact,
                      *final_view(emulator, artifact), workdir=self.workdir)


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of a box's log, indented, for a message on the terminal."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"    (cannot read it: {exc})"
    tail = text.rstrip().splitlines()[-lines:] or ["(empty)"]
    return "\n".join(f"    {line}" for line in tail)


def infer_artifact(calls: list[Call]) -> str:
    """The one artifact the boxes opened (pass ``--artifact`` when there are several)."""
    names = sorted({str(c.request.get("artifact")) for c in calls
                    if c.op == "open" and c.request.get("artifact")})
    if len(names) != 1:
        raise HarnessError(f"the boxes opened {len(names)} artifacts ({', '.join(names) or 'none'})"
                           "; name the one to check with --artifact")
    return names[0]


def final_view(emulator: Emulator, artifact: str) -> tuple[list[dict[str, Any]],
                                                            dict[str, Any] | None]:
    """The artifact's version history and usage, read straight from the service."""
    resp = emulator.get("/versions/list", artifact=artifact)
    history = resp.json().get("versions", []) if resp.status_code == 200 else []
    usage = emulator.get("/usage/read", artifact=artifact)
    return history, usage.json() if usage.status_code == 200 else None
