"""Suite runs forked from a process that imported pytest and the suite's libraries once.

The mutant table starts pytest on the suite about 380 times per CI run. A fresh
``python -m pytest`` spends ~1.5 s of CPU (2 shared cores, load 1) importing pytest,
hypothesis, requests, sybil and the rest before it collects a test, while a mutant's rule
run itself is mostly well under a second. A :class:`ForkServer` is a process that imports
those libraries once and forks one child per suite run; the child is the fresh pytest run
otherwise: it imports the suite, its conftest and every test module itself (with pytest's
assertion rewriting, from the bytecode cache), in its own working directory and
environment, and ends with pytest's exit code.

What the server preloads is only third-party and standard-library code that no test
module changes, and none of it belongs to a pytest11 plugin that pytest would rewrite (so
no "already imported" warning); ``conformance`` itself is never imported before pytest
starts. The server is run as a script, not with ``-m``, so that importing it does not
import the ``conformance`` package either.

Run as ``python forkserver.py``: reads one JSON request a line on stdin (``args``, ``env``,
``cwd``, ``out``), answers ``{"pid": N}`` once the child runs and ``{"status": S}`` (a
``waitpid`` status) when it ends; one request at a time.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["ForkServer", "ForkServers"]

#: The costly part of what a suite run imports besides the suite (checked against
#: sys.modules after one; hypothesis.stateful once the state machine runs); a name that does
#: not import is left to the child. Not ``anyio``: its pytest11 plugin is one pytest
#: rewrites, and it would warn that the module was imported before it could.
PRELOAD = (
    "pytest", "_pytest.pytester", "hypothesis", "hypothesis.strategies", "hypothesis.stateful",
    "_hypothesis_pytestplugin", "requests", "urllib3", "yaml", "sybil",
    "sybil.integration.pytest", "sybil.parsers.markdown", "asyncio", "concurrent.futures",
    "xml.etree.ElementTree", "unittest", "pdb", "email.message", "http.client",
)
#: Seconds the server may take to import the preloaded modules (a loaded CI machine).
START_TIMEOUT = 120.0


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the child imports it itself, or fails as it would
            continue


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become the ``python -m pytest ARGS`` process the runner asked
    for, then leave with pytest's exit code (never returning into the server's loop)."""
    code = 70  # EX_SOFTWARE: pytest.main itself raised
    try:
        os.setsid()  # a timeout kills the run's process group, whatever it started
        out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import pytest

        # As `python -m pytest` sets them: the working directory first on the path, and
        # argv[0] the module's file (the suite's report records argv[1:] as its command).
        sys.path.insert(0, os.getcwd())
        sys.argv = [str(Path(pytest.__file__).with_name("__main__.py")), *request["args"]]
        code = int(pytest.main(request["args"]))
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve() -> None:
    # Script mode put this file's directory first on sys.path: the preload must not find
    # the mutant modules as top-level names, and each child puts its own directory there.
    del sys.path[0]
    _preload()
    # The preloaded modules live as long as any run: kept out of the children's garbage
    # collections (pytest collects several times at its end, over every object it finds).
    gc.freeze()
    reply = sys.stdout
    reply.write('{"ready": true}\n')
    reply.flush()
    for line in sys.stdin:
        request = json.loads(line)
        reply.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        reply.write(json.dumps({"pid": pid}) + "\n")
        reply.flush()
        _, status = os.waitpid(pid, 0)
        reply.write(json.dumps({"status": status}) + "\n")
        reply.flush()


class ForkServer:
    """The runner's side: one server process, one suite run at a time (a lock)."""

    def __init__(self, env: dict[str, str]) -> None:
        self._lock = threading.Lock()
        self._buffer = b""
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        self._running: int | None = None  # the run in progress, for stop()
        if self._message(time.monotonic() + START_TIMEOUT) != {"ready": True}:
            self.stop()
            raise RuntimeError("the suite's fork server did not start")

    def _message(self, deadline: float | None) -> dict[str, Any] | None:
        """The server's next line as JSON; None at the deadline or when it has ended."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def run(self, args: list[str], env: dict[str, str], cwd: str, out: Path,
            timeout: float) -> int | None:
        """``python -m pytest ARGS``'s exit code (negative: the signal that ended it), its
        output in ``out``; None if it ran past ``timeout`` seconds (its group is killed)."""
        with self._lock:
            assert self.proc.stdin is not None
            request = {"args": args, "env": env, "cwd": cwd, "out": str(out)}
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            started = self._message(time.monotonic() + START_TIMEOUT)
            if not started or "pid" not in started:
                raise RuntimeError("the suite's fork server stopped")
            self._running = started["pid"]
            ended = self._message(time.monotonic() + timeout)
            if ended is None:
                self._kill_child()
                self._message(None)  # the server has reaped it
            self._running = None
            return None if ended is None else os.waitstatus_to_exitcode(ended["status"])

    def _kill_child(self) -> None:
        if self._running is not None:
            try:
                os.killpg(self._running, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """End the server; a run still going (Ctrl-C in the runner) is killed first."""
        self._kill_child()
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the server's loop ends at end of input
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class ForkServers:
    """``count`` servers (one per job of the table), each run on whichever is free."""

    def __init__(self, count: int, env: dict[str, str]) -> None:
        self._free: queue.Queue[ForkServer] = queue.Queue()
        self._all: list[ForkServer] = []
        try:
            for _ in range(max(1, count)):
                self._all.append(ForkServer(env))
                self._free.put(self._all[-1])
        except BaseException:
            self.stop()
            raise

    def run(self, args: list[str], env: dict[str, str], cwd: str, out: Path,
            timeout: float) -> int | None:
        """:meth:`ForkServer.run` on a free server (waiting for one)."""
        server = self._free.get()
        try:
            return server.run(args, env, cwd, out, timeout)
        finally:
            self._free.put(server)

    def stop(self) -> None:
        for server in self._all:
            server.stop()


if __name__ == "__main__":
    serve()
