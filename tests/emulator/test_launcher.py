"""The one launcher (`emulator.run.served.ServedEmulator`) and the suite's own (`--target spawn`):
their readiness waits retry any error until their deadline, and a failed start leaves no
process behind."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
import requests

from conformance.spawn import SpawnedEmulator
from emulator.run.served import EmulatorDidNotStart, ServedEmulator
from tests.support.deadlines import HANG_GUARD


def group_gone(pgid: int, within_s: float = 60) -> bool:
    """Whether the group is gone, or goes: its killed members other than the leader are
    init's to reap, a moment after the kill."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_start_retries_slow_and_broken_health_answers(monkeypatch, tmp_path):
    real = requests.Session.request
    failures = [requests.ReadTimeout("read timed out"),
                requests.exceptions.ChunkedEncodingError("connection reset")]

    def flaky(self, method, url, *args, **kwargs):
        if url.endswith("/_emulator/health") and failures:
            raise failures.pop(0)
        return real(self, method, url, *args, **kwargs)

    monkeypatch.setattr(requests.Session, "request", flaky)
    emu = ServedEmulator("--workers", "1", "--data-dir", str(tmp_path / "data"))
    try:
        emu.start()
        assert failures == []
        assert real(requests.Session(), "GET", emu.url + "/_emulator/health",
                    timeout=60).status_code == 200
    finally:
        emu.kill()


def test_a_start_that_never_gets_healthy_kills_and_reaps_its_whole_group(tmp_path):
    emu = ServedEmulator("--workers", "1", "--data-dir", str(tmp_path / "data"),
                         start_timeout=0)
    with pytest.raises(EmulatorDidNotStart, match="never became healthy"):
        emu.start()
    assert emu.process is not None and emu.process.returncode is not None
    assert group_gone(emu.process.pid)
    assert emu.process.stdout is not None and emu.process.stdout.closed


def test_a_start_that_exits_says_why_and_leaves_nothing(tmp_path):
    emu = ServedEmulator("--config", str(tmp_path / "missing.toml"))
    with pytest.raises(EmulatorDidNotStart, match="exited") as caught:
        emu.start()
    assert "missing.toml" in str(caught.value)
    assert emu.process is not None and emu.process.returncode is not None


SLOW_HEALTH = '''
import http.server, sys, time

class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(2.5)  # every answer slower than a 2 s read timeout
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Slow)
print(f"o41 emulator listening on http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
'''


def test_the_suites_spawn_waits_out_slow_health_answers(tmp_path: Path):
    script = tmp_path / "slow_health.py"
    script.write_text(textwrap.dedent(SLOW_HEALTH))
    spawned = SpawnedEmulator(tmp_path, command=f"{sys.executable} {script}")
    try:
        assert spawned.start(timeout=HANG_GUARD).startswith("http://127.0.0.1:")
        assert spawned.proc is not None and spawned.proc.poll() is None
    finally:
        proc = spawned.proc
        spawned.stop()
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
