"""Real trainers under ``o41-emulator replay``: Lightning and torch.distributed.checkpoint.

Each trainer is written as for ``s3://`` (fixtures/examples/train_lightning.py,
train_dcp.py). Lightning runs as it is, and opens the artifact at launch by itself; the DCP
trainer runs under ``o41 run ... --resume latest --``, which opens before the trainer starts
and hands the open over. Both must pass ``spot-hop`` (a zombie woken after the relaunch's
first save) and ``zombie-wakes-early`` (woken at the relaunch's first call), resume at the
last checkpointed step, and the report must tell the fencing as it happened: each relaunch
fenced the box before it, and each zombie was refused and stopped by itself with exit 8.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.replay.test_replay_harness import EXAMPLES, REPO

pytestmark = pytest.mark.slow  # the slow tier (conftest.py): the real trainers' preemption matrix

needs_torch = pytest.mark.skipif(find_spec("torch") is None,
                                 reason="needs torch (pip install torch==2.13.0, CPU)")
needs_lightning = pytest.mark.skipif(find_spec("torch") is None or find_spec("lightning") is None,
                                     reason="needs torch and lightning (pip install lightning)")
# Lightning's import alone takes seconds; a box gets room for it on a loaded machine.
BOX_TIMEOUT = "240"
STEPS = 9  # spot-hop: A stops after 3 checkpoints, B is killed after 3 more, C runs to 9


def lightning(loc: str) -> list[str]:
    return [sys.executable, str(EXAMPLES / "train_lightning.py"), loc, "--steps", str(STEPS)]


def dcp_under_o41_run(loc: str) -> list[str]:
    return [sys.executable, "-m", "o41", "run", loc, "--resume", "latest", "--",
            sys.executable, str(EXAMPLES / "train_dcp.py"), loc, "--steps", str(STEPS)]


def replay(tmp_path: Path, scenario: str, command: list[str]) -> tuple[
        subprocess.CompletedProcess[str], dict[str, Any], dict[str, str]]:
    """Run the harness; return the process, its JSON report and each box's table row."""
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", scenario, "--workdir",
         str(tmp_path / "work"), "--timeout", BOX_TIMEOUT, "--json", str(report), "--",
         *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    data = json.loads(report.read_text()) if report.exists() else {}
    rows = {line.split()[1]: line for line in proc.stdout.splitlines() if line[:1].isdigit()}
    return proc, data, rows


def log(tmp_path: Path, box: str) -> str:
    return (tmp_path / "work" / f"box-{box}.log").read_text(errors="replace")


def assert_zombie_fenced_and_stopped(tmp_path: Path, stdout: str, row: str,
                                     newer_epochs: str) -> None:
    """The zombie's row, note lines and log agree: it was fenced and stopped with exit 8."""
    assert row.rstrip().split("  ")[-1].startswith("SIGSTOP -> SIGCONT -> exit 8"), row
    assert "not exercised" not in stdout
    assert "PASS  zombie-write" in stdout
    refused = re.search(r"(\d+) refused \(([a-z_,]+)\)", row)
    if refused:  # it tried to write: every refusal was a fence
        assert refused.group(2) == "fenced", row
    stderr_lines = [line for line in log(tmp_path, "A").splitlines()
                    if re.search(rf"epoch\D{{0,3}}[{newer_epochs}]\b", line)]
    assert stderr_lines, "the zombie's log names no newer holder's epoch"


def assert_spot_hop(tmp_path: Path, proc, report, rows) -> None:
    """What spot-hop must show for any trainer: B and C resume the latest across clouds,
    each fencing the box before it, and the zombie is fenced and stops."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["violations"] == []
    assert "latest -> step-00000003 (cross-cloud)" in rows["B"] and "A@1" in rows["B"]
    assert "latest -> step-00000006 (cross-cloud)" in rows["C"] and "B@2" in rows["C"]
    assert_zombie_fenced_and_stopped(tmp_path, proc.stdout, rows["A"], "23")


def assert_zombie_wakes_early(tmp_path: Path, proc, report, rows) -> None:
    """What zombie-wakes-early must show: B's open alone fenced A, whose steps stop at 2."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["violations"] == []
    assert "latest -> step-00000002 (cross-cloud)" in rows["B"] and "A@1" in rows["B"]
    assert "1-2 -> aws/us-east-1" in rows["A"] and "after SIGCONT" not in rows["A"]
    assert_zombie_fenced_and_stopped(tmp_path, proc.stdout, rows["A"], "2")


@needs_lightning
def test_lightning_trainer_passes_spot_hop_resuming_at_each_hop(tmp_path: Path) -> None:
    proc, report, rows = replay(tmp_path, "spot-hop", lightning("o41://experiments/lt-hop"))
    assert_spot_hop(tmp_path, proc, report, rows)
    assert "starting at global step 0" in log(tmp_path, "A")
    assert "starting at global step 3" in log(tmp_path, "B")
    assert "starting at global step 6" in log(tmp_path, "C")
    assert f"done at global step {STEPS}" in log(tmp_path, "C")


@needs_lightning
def test_lightning_trainer_passes_zombie_wakes_early(tmp_path: Path) -> None:
    proc, report, rows = replay(tmp_path, "zombie-wakes-early",
                                lightning("o41://experiments/lt-early"))
    assert_zombie_wakes_early(tmp_path, proc, report, rows)
    assert "starting at global step 2" in log(tmp_path, "B")
    assert f"done at global step {STEPS}" in log(tmp_path, "B")


@needs_torch
def test_dcp_trainer_under_o41_run_passes_spot_hop_resuming_at_each_hop(
        tmp_path: Path) -> None:
    proc, report, rows = replay(tmp_path, "spot-hop", dcp_under_o41_run("o41://experiments/dh"))
    assert_spot_hop(tmp_path, proc, report, rows)
    assert "starting at step 0" in log(tmp_path, "A")
    assert "resumed at step 3 from o41://experiments/dh/latest" in log(tmp_path, "B")
    assert "resumed at step 6 from o41://experiments/dh/latest" in log(tmp_path, "C")
    assert f"done at step {STEPS}" in log(tmp_path, "C")


@needs_torch
def test_dcp_trainer_under_o41_run_passes_zombie_wakes_early(tmp_path: Path) -> None:
    proc, report, rows = replay(tmp_path, "zombie-wakes-early",
                                dcp_under_o41_run("o41://experiments/de"))
    assert_zombie_wakes_early(tmp_path, proc, report, rows)
    assert "resumed at step 2 from o41://experiments/de/latest" in log(tmp_path, "B")
    assert f"done at step {STEPS}" in log(tmp_path, "B")
