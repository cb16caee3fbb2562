"""``--target spawn``: run the project's emulator as a subprocess for one test session.

The emulator is started as a program (``o41-emulator serve``), never imported, so the
suite stays independent of the code it judges. Its output goes to files in the session's
work directory: no pipes to fill up or block on.
"""

from __future__ import annotations

import ctypes
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import requests

__all__ = ["SPAWN_MAX_FILE_SIZE", "SpawnError", "SpawnedEmulator", "emulator_config"]

#: The file size limit of a spawned emulator: above every file the suite writes (3 MB at
#: most), low enough for the suite to send a body past it (--max-put-bytes).
SPAWN_MAX_FILE_SIZE = 8 << 20

# How long a spawned emulator may take to answer its first health check. Long, since an
# exit ends the wait at once: only a start that hangs meets it, and on a 2-core runner beside
# six busy processes one took over 30 s (load 13-20).
START_TIMEOUT = 300.0
_LISTENING = re.compile(r"listening on (http://\S+)")
_KEY = re.compile(r"O41_ARTIFACTS_API_KEY=(\S+)")


class SpawnError(RuntimeError):
    """The emulator could not be started; the message carries its stderr tail."""


def emulator_config(
    read_key: str,
    scoped_key: str,
    write_prefix: str,
    read_prefix: str | None = None,
    url_lifetime: int | None = None,
) -> str:
    """A config TOML offering a read-only key, a key with write on ``write_prefix`` (and read
    on ``read_prefix``) and, for the URL expiry test only, a short URL lifetime (uploads live
    as long as their URLs, so the main run keeps the default lifetime and never races a
    clock). The suite then gets these keys exactly as ``--read-key`` and ``--scoped-key``
    would hand them over for a URL target."""
    lifetime = f"url_lifetime = {int(url_lifetime)}\n" if url_lifetime else ""
    # A file size limit the suite can go past (VER-6.e) while every file it writes fits.
    lifetime += f"max_file_size = {SPAWN_MAX_FILE_SIZE}\n\n"
    scopes = [f'{{ prefix = "{write_prefix}", access = "write" }}']
    if read_prefix:
        scopes.append(f'{{ prefix = "{read_prefix}", access = "read" }}')
    return (
        lifetime + f'[[keys]]\nkey = "{read_key}"\n'
        'scopes = [{ prefix = "", access = "read" }]\n\n'
        f'[[keys]]\nkey = "{scoped_key}"\nscopes = [{", ".join(scopes)}]\n'
    )


def _die_with_parent() -> None:
    """Linux: SIGTERM the emulator if this pytest process dies without its teardown."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def _command(explicit: str | None) -> list[str]:
    if explicit:
        return shlex.split(explicit)
    beside = Path(sys.executable).with_name("o41-emulator")
    found = str(beside) if beside.exists() else shutil.which("o41-emulator")
    if not found:
        raise SpawnError(
            "o41-emulator not found: pip install the project, or pass --emulator-command"
        )
    return [found]


# The emulator's `serve --database` from the environment (o41-emulator serve --help).
SERVE_DATABASE = "O41_EMULATOR_SERVE_DATABASE"


class SpawnedEmulator:
    """One emulator process on a free port, stopped with SIGTERM at the end."""

    def __init__(
        self,
        workdir: Path,
        *,
        faults: Sequence[str] = (),
        config: str | None = None,
        command: str | None = None,
        own_database: bool = False,
    ) -> None:
        self.workdir = workdir
        self.faults = list(faults)
        self.config = config
        self.command = command
        self.own_database = own_database
        self.proc: subprocess.Popen[bytes] | None = None
        self._args: list[str] = []
        self._ready = False
        self.url = ""
        self.key: str | None = None

    def _tail(self, name: str) -> str:
        path = self.workdir / name
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def _env(self) -> dict[str, str] | None:
        """A second emulator beside the main one is a deployment of its own: a database
        named for serve in the environment (the main one's) stays the main one's, since
        nodes that share a database must share storage too."""
        if not self.own_database:
            return None
        return {k: v for k, v in os.environ.items() if k != SERVE_DATABASE}

    def start(self, timeout: float = START_TIMEOUT) -> str:
        """Start and wait until ``/_emulator/health`` answers; return the URL."""
        self.launch()
        return self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the process without waiting for it: a second emulator comes up while the
        first one does, or while tests run (:meth:`wait_ready` waits for it)."""
        self._args = [*_command(self.command), "serve", "--host", "127.0.0.1", "--port", "0"]
        self._args += ["--data-dir", str(self.workdir / "data")]
        if self.config is not None:
            cfg = self.workdir / "emulator.toml"
            cfg.write_text(self.config)
            self._args += ["--config", str(cfg)]
        for fault in self.faults:
            self._args += ["--fault", fault]
        with (
            open(self.workdir / "stdout.log", "wb") as out,
            open(self.workdir / "stderr.log", "wb") as err,
        ):
            self.proc = subprocess.Popen(
                self._args, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent, env=self._env(),
            )

    def wait_ready(self, timeout: float = START_TIMEOUT) -> str:
        """Wait until the launched emulator's ``/_emulator/health`` answers; its URL."""
        if self._ready and self.proc is not None:
            return self.url
        if self.proc is None:
            raise SpawnError("emulator not launched (or already stopped)")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._tail("stdout.log")
            m = _LISTENING.search(text)
            if m and not self.url:
                self.url = m.group(1)
                key = _KEY.search(text)
                self.key = key.group(1) if key else None
            if self.url and self._healthy(deadline - time.monotonic()):
                self._ready = True
                return self.url
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise SpawnError(
            f"emulator did not come up ({' '.join(self._args)}):\n{self._tail('stderr.log')}"
        )

    def _healthy(self, left: float) -> bool:
        """Any error is retried until the deadline: a slow answer on a loaded machine may
        take what is left of it."""
        try:
            got = requests.get(self.url + "/_emulator/health", timeout=max(left, 0.1))
            return got.status_code == 200
        except Exception:  # noqa: BLE001 - not up yet, or too busy: the loop decides
            return False

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit within 10 s."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
