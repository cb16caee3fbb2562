"""The Lightning and DCP example trainers on local storage: a relaunch resumes where the
last launch checkpointed, with the same code that runs on ``o41://``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.replay.test_replay_trainers import EXAMPLES, needs_lightning, needs_torch

pytestmark = pytest.mark.slow  # the slow tier (conftest.py): real trainers killed and relaunched


def train(script: str, location: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), location, *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@needs_torch
def test_dcp_trainer_relaunch_resumes_from_the_highest_step_of_a_file_url(
        tmp_path: Path) -> None:
    loc = (tmp_path / "run").as_uri()
    first = train("train_dcp.py", loc, "--steps", "4", "--every", "2")
    assert "starting at step 0" in first and "done at step 4" in first
    again = train("train_dcp.py", loc, "--steps", "6", "--every", "2")
    assert f"resumed at step 4 from {loc}/step-00000004" in again
    assert "done at step 6" in again
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "step-00000002", "step-00000004", "step-00000006"]


@needs_lightning
def test_lightning_trainer_relaunch_resumes_from_last_on_a_local_path(tmp_path: Path) -> None:
    loc = str(tmp_path / "run")
    first = train("train_lightning.py", loc, "--steps", "4", "--every", "2",
                  "--step-seconds", "0")
    assert "starting at global step 0" in first and "done at global step 4" in first
    again = train("train_lightning.py", loc, "--steps", "6", "--every", "2",
                  "--step-seconds", "0")
    assert "starting at global step 4" in again and "done at global step 6" in again
    assert {p.name for p in (tmp_path / "run").iterdir()} == {"epoch=0-step=6.ckpt",
                                                              "last.ckpt"}
