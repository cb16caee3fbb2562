"""The location-string-only trainer (numpy + safetensors through plain fsspec paths) under
``o41-emulator replay``: it passes what the o41-aware good trainer passes, and the checks
still catch an emulator that does not fence it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.test_replay_harness import SPOT_HOP, ids, replay

pytest.importorskip("numpy", reason="the example needs the examples extra (numpy)")
pytest.importorskip("safetensors", reason="the example needs the examples extra (safetensors)")

TRAINER = "train_fsspec.py"


def test_fsspec_trainer_passes_spot_hop(tmp_path: Path) -> None:
    proc, report = replay(tmp_path, TRAINER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["violations"] == []
    rows = [line.split() for line in proc.stdout.splitlines() if line[:1].isdigit()]
    assert [(r[1], r[2]) for r in rows] == [
        ("A", "aws/us-east-1"), ("B", "gcp/europe-west4"), ("C", "azure/westeurope")]
    assert "latest -> step-00000003 (cross-cloud)" in proc.stdout
    assert proc.stdout.count("PASS ") == 7
    zombie_log = (tmp_path / "work" / "box-A.log").read_text()
    # fenced means stopped: the zombie ends itself with one line and exit 8 (docs/fsspec.md)
    fenced = [ln for ln in zombie_log.splitlines() if ln.startswith("o41: fenced: ")]
    assert len(fenced) == 1 and "exit 8" in fenced[0], zombie_log


def test_fsspec_trainer_logs_placement_warnings_without_location(tmp_path: Path) -> None:
    scenario = tmp_path / "no-location.yaml"
    scenario.write_text(
        "name: no-location\nboxes:\n"
        "  - {id: A, place: gcp/us-central1, preempt: {after_checkpoints: 2}}\n"
        "  - {id: B, place: lambda/us-west-1, preempt: {after_checkpoints: 2}}\n"
        "  - {id: C, place: unknown}\n")
    proc, report = replay(tmp_path, TRAINER, scenario)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["violations"] == []
    rows = {line.split()[1]: line for line in proc.stdout.splitlines() if line[:1].isdigit()}
    assert "-> gcp/europe-west4" in rows["A"]
    assert "-> aws/us-east-1" in rows["B"] and "-> aws/us-east-1" in rows["C"]
    assert "fallback" in (tmp_path / "work" / "box-B.log").read_text()


def test_fsspec_trainer_on_emulator_without_fencing_flagged_zombie_write(
        tmp_path: Path) -> None:
    # The client's own stop (its watch of the epoch) is turned off, so only the service's
    # fencing stands between the zombie and a visible late write: here it is missing.
    proc, report = replay(tmp_path, TRAINER, SPOT_HOP, "--emulator-arg=--fault",
                          "--emulator-arg=no-fencing",
                          prefix=("env", "O41_FENCE_CHECK=0", "O41_ON_FENCED=raise"))
    assert proc.returncode == 1
    assert "zombie-write" in ids(report)
