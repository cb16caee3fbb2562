"""``o41-emulator replay`` end to end: real trainer processes, real signals, a fresh emulator.

The good example trainer passes the page's hop scenario; each broken variant is flagged with
its own violation, and so is an emulator started with a fencing fault.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.deadlines import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "fixtures" / "examples"
SPOT_HOP = REPO / "conformance" / "scenario_files" / "spot-hop.yaml"


def replay(tmp_path: Path, trainer: str, scenario: Path | str = "spot-hop",
           *options: str, prefix: tuple[str, ...] = ()
           ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the harness on an example trainer (after ``prefix``, e.g. ``env VAR=1``);
    return the process and its JSON report."""
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", str(scenario), "--workdir",
         str(tmp_path / "work"), "--timeout", "60", "--json", str(report), *options, "--",
         *prefix, sys.executable, str(EXAMPLES / trainer), "o41://experiments/spot-hop",
         "--steps", "12"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc, data


def ids(report: dict[str, Any]) -> set[str]:
    return {v["check"] for v in report.get("violations", [])}


def test_good_trainer_passes_spot_hop(tmp_path: Path) -> None:
    proc, report = replay(tmp_path, "train.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["violations"] == []
    rows = [line.split() for line in proc.stdout.splitlines() if line[:1].isdigit()]
    assert [(r[1], r[2]) for r in rows] == [
        ("A", "aws/us-east-1"), ("B", "gcp/europe-west4"), ("C", "azure/westeurope")]
    assert "latest -> step-00000003 (cross-cloud)" in proc.stdout
    assert proc.stdout.count("PASS ") == 7
    zombie_log = (tmp_path / "work" / "box-A.log").read_text()
    assert "fenced by a newer launch of the same task" in zombie_log
    assert "at epoch 2" in zombie_log


def test_fresh_every_launch_trainer_flagged_fresh_start(tmp_path: Path) -> None:
    proc, report = replay(tmp_path, "train_fresh.py")
    assert proc.returncode == 1
    assert "fresh-start" in ids(report)
    assert not ids(report) & {"zombie-write", "not-resumed", "history"}
    assert "VIOLATION fresh-start: box B" in proc.stdout


def test_trainer_ignoring_fencing_flagged_zombie_write(tmp_path: Path) -> None:
    proc, report = replay(tmp_path, "train_ignores_fencing.py")
    assert proc.returncode == 1
    assert "zombie-write" in ids(report)
    assert not ids(report) & {"fresh-start", "not-resumed"}
    assert "re-opened the artifact after SIGCONT" in proc.stdout


def test_boxes_without_location_log_the_placement_warning(tmp_path: Path) -> None:
    scenario = tmp_path / "no-location.yaml"
    scenario.write_text(
        "name: no-location\nboxes:\n"
        "  - {id: A, place: gcp/us-central1, preempt: {after_checkpoints: 2}}\n"
        "  - {id: B, place: lambda/us-west-1, preempt: {after_checkpoints: 2}}\n"
        "  - {id: C, place: unknown}\n")
    proc, report = replay(tmp_path, "train.py", scenario)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split()[1]: line for line in proc.stdout.splitlines() if line[:1].isdigit()}
    assert "-> gcp/europe-west4" in rows["A"]  # that cloud's default location
    assert "-> aws/us-east-1" in rows["B"] and "-> aws/us-east-1" in rows["C"]  # the fallback
    assert "WARNING" in (tmp_path / "work" / "box-A.log").read_text()
    assert "fallback" in (tmp_path / "work" / "box-B.log").read_text()


def test_emulator_without_fencing_flagged_zombie_write(tmp_path: Path) -> None:
    proc, report = replay(tmp_path, "train.py", SPOT_HOP, "--emulator-arg=--fault",
                          "--emulator-arg=no-fencing")
    assert proc.returncode == 1
    assert "zombie-write" in ids(report)


@pytest.mark.parametrize("content,message", [("name: x\n", "no boxes"),
                                             ("boxes: [{id: A, place: aws}]\n", "cloud/region")])
def test_bad_scenario_is_a_usage_error(tmp_path: Path, content: str, message: str) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(content)
    proc, _ = replay(tmp_path, "train.py", scenario)
    assert proc.returncode == 2 and message in proc.stderr


def test_command_that_never_opens_is_killed_on_time_and_reported(tmp_path: Path) -> None:
    scenario = tmp_path / "idle.yaml"
    scenario.write_text("name: idle\nboxes:\n"
                        "  - {id: A, place: aws/us-east-1, preempt: {after_seconds: 0.5}}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", str(scenario), "--workdir",
         str(tmp_path / "work"), "--", sys.executable, "-c", "import time; time.sleep(60)"],
        cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 3
    assert "SIGKILL A after 0 checkpoints" in proc.stderr
    assert "opened 0 artifacts" in proc.stderr
