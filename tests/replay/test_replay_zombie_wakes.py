"""Zombies waking at different moments of a relaunch, end to end with the good trainer.

``zombie-wakes-early`` wakes the zombie at the relaunch's first API call (its open), long
before the relaunch's first save. A relaunch that starts slowly lets a zombie woken at once
commit steps of its own before it is superseded; the report must show those steps and call
fencing exercised, since the zombie's next save was fenced.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.replay.test_replay_harness import EXAMPLES, REPO, replay

# Runs train.py, except that box B waits before it starts: a relaunch slow to begin.
SLOW_B = ("import os, runpy, sys, time\n"
          "time.sleep(2.0 if os.environ.get('O41_REPLAY_BOX') == 'B' else 0)\n"
          "sys.argv = sys.argv[1:]\n"
          "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def rows(stdout: str) -> dict[str, str]:
    return {line.split()[1]: line for line in stdout.splitlines() if line[:1].isdigit()}


def test_good_trainer_passes_zombie_wakes_early(tmp_path: Path) -> None:
    proc, report = replay(tmp_path, "train.py", "zombie-wakes-early")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["violations"] == []
    row = rows(proc.stdout)
    assert "latest -> step-00000002 (cross-cloud)" in row["B"] and "A@1" in row["B"]
    assert "1-2 -> aws/us-east-1; 1 refused (fenced)" in row["A"]
    assert "SIGSTOP -> SIGCONT -> exit 8 (" in row["A"]
    assert "not exercised" not in proc.stdout
    assert "SIGCONT A" in proc.stderr


def test_zombie_woken_before_a_slow_relaunch_opened_reported_with_its_own_steps(
        tmp_path: Path) -> None:
    scenario = tmp_path / "wakes-at-once.yaml"
    scenario.write_text(
        "name: wakes-at-once\nboxes:\n"
        "  - id: A\n    place: aws/us-east-1\n"
        "    preempt: {after_checkpoints: 3, mode: stop, resume_after: {seconds: 0}}\n"
        "  - {id: B, place: gcp/europe-west4}\n")
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", str(scenario), "--workdir",
         str(tmp_path / "work"), "--timeout", "60", "--json", str(report), "--",
         sys.executable, "-c", SLOW_B, str(EXAMPLES / "train.py"),
         "o41://experiments/wakes", "--steps", "80", "--size-kb", "16"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = rows(proc.stdout)
    # A committed steps after SIGCONT at epoch 1 (B had not begun), then was fenced
    assert "1-3 -> aws/us-east-1; after SIGCONT 4-" in row["A"]
    assert "1 refused (fenced)" in row["A"] and "exit 8" in row["A"]
    assert "not exercised" not in proc.stdout
    assert "PASS  zombie-write" in proc.stdout
    assert json.loads(report.read_text())["violations"] == []
