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
                 start_timeout: float = 60.0, quiet: bool = True) -> None:
        self.args = list(args)
        self.env = env
        self.start_timeout = start_timeout
        self.quiet = quiet
        self.url = self.key = ""
        self.lines: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    @property
    def api_url(self) -> str:
        return self.url + "/api/v1"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def start(self) -> ServedEmulator:
        # stderr goes to a file: a pipe nobody reads would block a chatty server.
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "emulator", "serve", "--host", "127.0.0.1", "--port", "0",
             *(["--quiet"] if self.quiet else []), *self.args],
            stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            env={**os.environ, **(self.env or {})},
            start_new_session=True,  # its own process group, so kill() takes every worker
        )
        assert self.process.stdout is not None
        while not self.key:
            line = self.process.stdout.readline()
            if not line:
                self.process.wait()
                said = self.log()[-2000:]  # before _close() closes the file it is in
                self._close()
                raise EmulatorDidNotStart(
                    f"the emulator exited ({self.process.returncode}): {said}")
            self.lines.append(line)
            if m := re.search(r"listening on (http://\S+)", line):
                self.url = m.group(1)
            if m := re.search(r"O41_ARTIFACTS_API_KEY=(\S+)", line):
                self.key = m.group(1)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/_emulator/health", timeout=2).status_code == 200:
                    return self
            except (requests.ConnectionError, requests.Timeout):
                pass  # not listening yet, or too busy to answer in 2 s: ask again until
                # the deadline, which kills it (a Timeout let through left it running)
            time.sleep(0.02)
        self.kill()
        raise EmulatorDidNotStart(f"{self.url} never became healthy")

    def log(self) -> str:
        """What the emulator wrote to stderr so far (log lines, fault banners)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()

    def stop(self, timeout: float = 15.0) -> None:
        """Stop as a user does (SIGTERM), which also removes a temporary data dir."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()

    def kill(self) -> None:
        """Stop at once, every worker included (a graceful stop takes over a second)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._close()

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
