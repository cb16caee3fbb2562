"""`o41-emulator serve` in a subprocess on a free port, for tests and tools.

Like moto's `ThreadedMotoServer`, but a real server process: gunicorn workers, the CLI's
own start-up, the same data directory rules. The replay harness and the project's tests start
emulators through this one class.

    with ServedEmulator("--fault", "no-fencing") as emu:
        requests.get(emu.api_url + "/versions/list", params=..., headers=emu.auth)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import requests


class EmulatorDidNotStart(RuntimeError):
    """The subprocess exited, printed no URL, or never answered its health check."""


class ServedEmulator:
    """One emulator subprocess; `args` go to `o41-emulator serve` after `--port 0`."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 start_timeout: float = 300.0, quiet: bool = True) -> None:
        # Long, since an exit ends the wait at once: only a start that hangs meets it, and
        # on a 2-core runner beside six busy processes a start took over 30 s (load 13-20).
        self.args = list(args)
        self.env = env
        self.start_timeout = start_timeout
        self.quiet = quiet
        self.url = self.key = ""
        self.lines: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self.poll = 0.02  # seconds between health checks while starting
        self._stderr: IO[str] | None = None

    @property
    def api_url(self) -> str:
        return self.url + "/api/v1"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def start(self) -> ServedEmulator:
        """Start and wait until it answers its health check; on any failure, everything
        started is killed and reaped before `EmulatorDidNotStart` is raised."""
        # stderr goes to a file: a pipe nobody reads would block a chatty server.
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "emulator", "serve", "--host", "127.0.0.1", "--port", "0",
             *(["--quiet"] if self.quiet else []), *self.args],
            stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            env={**os.environ, **(self.env or {})},
            start_new_session=True,  # its own process group, so kill() takes every worker
        )
        try:
            self._read_banner()
            self._wait_ready(time.monotonic() + self.start_timeout)
        except BaseException:  # a KeyboardInterrupt too: nothing it started may outlive it
            self.kill()
            raise
        return self

    def _read_banner(self) -> None:
        """Read stdout until the URL and key are printed (the port is bound by then)."""
        assert self.process is not None and self.process.stdout is not None
        while not self.key:
            line = self.process.stdout.readline()
            if not line:
                # It closed stdout to exit before serving: no worker of it can be running.
                self.process.wait()
                said = self.log()[-2000:]  # before kill() closes the file it is in
                self.kill()
                raise EmulatorDidNotStart(
                    f"the emulator exited ({self.process.returncode}): {said}")
            self.lines.append(line)
            if m := re.search(r"listening on (http://\S+)", line):
                self.url = m.group(1)
            if m := re.search(r"O41_ARTIFACTS_API_KEY=(\S+)", line):
                self.key = m.group(1)

    def _wait_ready(self, deadline: float) -> None:
        """Poll health until a 200 or the deadline. Any error is retried: a refused
        connection, a reset, a slow answer on a loaded machine, a 503 while the database
        opens. Each attempt may take what is left of the deadline."""
        assert self.process is not None
        last = "no answer yet"
        with requests.Session() as session:
            while (left := deadline - time.monotonic()) > 0:
                if self._leader_exited():
                    said = self.log()[-2000:]
                    self.kill()
                    raise EmulatorDidNotStart(
                        f"the emulator exited ({self.process.returncode}): {said}")
                try:
                    got = session.get(f"{self.url}/_emulator/health", timeout=max(left, 0.1))
                    if got.status_code == 200:
                        return
                    last = f"health answered {got.status_code}"
                except requests.RequestException as exc:
                    last = f"{type(exc).__name__}: {exc}"
                time.sleep(min(self.poll, max(deadline - time.monotonic(), 0)))
        raise EmulatorDidNotStart(
            f"{self.url} never became healthy in {self.start_timeout:.0f} s ({last}): "
            f"{self.log()[-2000:]}")

    def log(self) -> str:
        """What the emulator wrote to stderr so far (log lines, fault banners)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()

    def stop(self, timeout: float = 15.0) -> None:
        """Stop as a user does (SIGTERM), which also removes a temporary data dir; gunicorn
        ends its workers before it exits. Killed, group and all, if it takes longer."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        """Stop at once, every worker included (a graceful stop takes over a second), and
        reap it. The group is killed even when its leader has exited (workers may outlive
        it), but only until the leader is reaped: then its pid, the group's id, may be
        another process's."""
        if self.process is not None and self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:  # the group is gone already
                pass
            self.process.wait()
        self._close()

    def _leader_exited(self) -> bool:
        """Whether the server process exited, without reaping it (see kill())."""
        assert self.process is not None
        if self.process.returncode is not None:
            return True
        try:
            found = os.waitid(os.P_PID, self.process.pid,
                              os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return found is not None

    def _close(self) -> None:
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()

    def __enter__(self) -> ServedEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_on(data_dir: Path, *args: str, **kwargs) -> ServedEmulator:
    """Start an emulator on `data_dir` and wait until it is healthy."""
    return ServedEmulator("--data-dir", str(data_dir), *args, **kwargs).start()
