"""The session-end check of tests/conftest.py: a run whose test leaves an emulator running
fails, and the emulator is ended; a run that stops what it starts passes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

LEAKY = '''
import re, subprocess, sys

def test_starts_an_emulator_and_forgets_it(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "emulator", "serve", "--port", "0",
                             "--quiet", "--workers", "1", "--data-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    url = re.search(r"listening on (\\S+)", proc.stdout.readline()).group(1)
    print("LEFT", proc.pid, url)
'''

TIDY = '''
from emulator.run.served import ServedEmulator

def test_starts_an_emulator_and_stops_it():
    with ServedEmulator("--workers", "1") as emu:
        assert emu.url
'''


def run_tests(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_it.py").write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "tests.conftest", "--rootdir", str(tmp_path), str(tmp_path / "test_it.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_run_that_leaves_an_emulator_running_fails_and_ends_it(tmp_path: Path) -> None:
    done = run_tests(tmp_path, LEAKY)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    # the emulator's master and its one gunicorn worker
    assert "the tests left 2 server process(es) running (now killed)" in done.stdout
    pid = int(done.stdout.split("LEFT ", 1)[1].split()[0])
    assert f"pid {pid}: " in done.stdout and "emulator serve" in done.stdout
    assert not alive(pid)


def test_a_run_that_stops_what_it_starts_passes(tmp_path: Path) -> None:
    done = run_tests(tmp_path, TIDY)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "server process" not in done.stdout
