"""What replay tells a newcomer: a trainer that dies at once, reads made with no place.

A box that exits non-zero before any API call (a missing argument, an import error) is
reported as such with the tail of its log, not as "name the artifact with --artifact"; a
trainer that sends no place still has its resume reads counted by the not-resumed check.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from replay.checks import check
from tests.replay.test_replay_checks import SIZE, Hop
from tests.support.deadlines import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]


def test_box_exiting_before_any_call_is_named_with_the_tail_of_its_log(tmp_path: Path) -> None:
    scenario = tmp_path / "one.yaml"
    scenario.write_text("name: one\nboxes:\n  - {id: A, place: aws/us-east-1}\n")
    work = tmp_path / "work"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", str(scenario), "--workdir", str(work),
         "--", sys.executable, "fixtures/examples/train.py"],  # the location is missing
        cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 3
    log = work / "box-A.log"
    assert (f"replay: no box opened an artifact: box A exited with 2 before making any API "
            f"call; the last lines of {log}:\n") in done.stderr
    assert "    train.py: error: the following arguments are required: location\n" in done.stderr
    assert f"replay: box logs in {work}\n" in done.stderr
    assert "--artifact" not in done.stderr


def test_replay_launches_no_box_after_one_that_failed_before_it_opened(
        tmp_path: Path) -> None:
    scenario = tmp_path / "three.yaml"
    scenario.write_text("name: three\nboxes:\n  - {id: A, place: aws/us-east-1}\n"
                        "  - {id: B, place: gcp/europe-west4}\n"
                        "  - {id: C, place: azure/westeurope}\n")
    work = tmp_path / "work"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", str(scenario), "--workdir", str(work),
         "--", sys.executable, "-c", "import sys; sys.exit('no o41 here')"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 3, done.stderr
    assert "A failed before it opened: the boxes after it are not launched" in done.stderr
    assert "launch B" not in done.stderr and "launch C" not in done.stderr
    assert sorted(p.name for p in work.glob("box-*.log")) == ["box-A.log"]


def test_resume_reads_made_without_a_place_count_for_not_resumed(tmp_path: Path) -> None:
    hop = Hop(tmp_path)
    # Box B's trainer sent no place: its read of step 1 was metered under an unknown place.
    hop.reads = [{"direction": "read", "version": "step-00000001", "place": None,
                  "route": "cross_cloud", "bytes": SIZE}]
    assert "not-resumed" not in {v.check for v in check(hop.replay())}
    hop.reads = [{**hop.reads[0], "bytes": SIZE // 2}]
    flagged = [v for v in check(hop.replay()) if v.check == "not-resumed"]
    assert [v.message for v in flagged] == [
        f"read {SIZE // 2} bytes of step-00000001 before writing, less than the {SIZE} a "
        "load of it takes: it did not load what it resumed from"]
