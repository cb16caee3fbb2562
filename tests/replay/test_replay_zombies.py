"""The zombie half of the checks and its row in the report, on hand-made call logs.

A zombie is judged over its whole life after SIGCONT: one that wakes before the relaunch has
opened commits steps of its own, is superseded later, and is fenced then. The report must
show those steps and must not call fencing unexercised when the zombie was in fact fenced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.checks import check
from replay.table import render
from tests.replay.test_replay_checks import AWS, GCP, Hop, call, fail, opened, version


@pytest.fixture
def hop(tmp_path: Path) -> Hop:
    return Hop(tmp_path)


@pytest.fixture
def early(tmp_path: Path) -> Hop:
    """Zombie A wakes at 2.5, before box B's open at 3, and commits step 2 at epoch 1; B then
    resumes from that step, and A's next write is fenced."""
    hop = Hop(tmp_path)
    v2 = version(2, 1, AWS)
    hop.calls[3:3] = [
        call("A", "write", 2.6, {"upload": "u2a"}, token="tk1", version="step-00000002"),
        call("A", "commit", 2.7, v2, token="tk1", upload="u2a"),
    ]
    hop.calls[5] = call("B", "open", 3, opened(2, {**v2, "cross_cloud": True},
                                                fenced={"epoch": 1, "holder": "h"}),
                        artifact="p/n", resume="latest")
    hop.calls[6] = call("B", "write", 4, {"upload": "u3"}, token="tk2", version="step-00000003")
    hop.calls[7] = call("B", "commit", 5, version(3, 2, GCP), token="tk2", upload="u3")
    hop.calls[8] = call("A", "write", 6, fail("fenced"), 409, token="tk1",
                        version="step-00000003")
    hop.history = [version(1, 1, AWS), v2, version(3, 2, GCP)]
    hop.reads[0]["version"] = "step-00000002"
    hop.preempt["A"] = ("stop", 2.5)
    return hop


def test_zombie_woken_before_the_relaunch_opened_is_fenced_later_and_passes(early: Hop) -> None:
    replay = early.replay()
    assert check(replay) == []
    assert replay.notes == []


def test_zombie_row_shows_the_steps_it_committed_after_sigcont(early: Hop) -> None:
    replay = early.replay()
    report = render(replay, check(replay))
    [row] = [line for line in report.splitlines() if line.startswith("0 ")]
    assert "1 -> aws/us-east-1; after SIGCONT 2 -> aws/us-east-1; 1 refused (fenced)" in row
    assert "not exercised" not in report


def test_zombie_commit_after_the_relaunch_listed_but_before_it_opened_flagged(
        early: Hop) -> None:
    early.calls.insert(3, call("B", "list", 2.55, {"versions": []}, artifact="p/n"))
    [v] = check(early.replay())
    assert v.check == "zombie-write" and v.box == "A"
    assert "step-00000002" in v.message and "after box B had begun" in v.message


def test_fenced_zombie_that_trains_on_to_exit_0_flagged(hop: Hop) -> None:
    hop.exits["A"] = (6.5, 0)
    [v] = check(hop.replay())
    assert v.check == "zombie-write" and "exited 0" in v.message


def test_zombie_that_checks_the_artifact_and_stops_by_itself_passes(hop: Hop) -> None:
    hop.calls[6] = call("A", "read_artifact", 6, {"epoch": 2, "holder": "h"}, artifact="p/n")
    assert check(hop.replay()) == []


def test_zombie_that_checks_the_artifact_and_exits_0_flagged(hop: Hop) -> None:
    hop.calls[6] = call("A", "read_artifact", 6, {"epoch": 2, "holder": "h"}, artifact="p/n")
    hop.exits["A"] = (6.5, 0)
    [v] = check(hop.replay())
    assert v.check == "zombie-write" and "fencing was not exercised" in v.message


def test_zombie_crashing_after_a_check_without_a_fenced_refusal_flagged(hop: Hop) -> None:
    # e.g. DCP's writer saw the newer box's step and failed to replace its .metadata
    hop.calls[6] = call("A", "read_version", 6, {"version": "step-00000002"}, artifact="p/n")
    hop.exits["A"] = (6.5, 1)
    replay = hop.replay()
    [v] = check(replay)
    assert v.check == "zombie-write" and "exited 1, not with the fenced exit 8" in v.message
    [row] = [line for line in render(replay, [v]).splitlines() if line.startswith("0 ")]
    assert row.endswith("SIGSTOP -> SIGCONT -> exit 1")


def test_zombie_that_ended_before_any_newer_open_is_a_note(early: Hop) -> None:
    del early.calls[8]
    early.exits["A"] = (2.8, 0)
    replay = early.replay()
    assert check(replay) == []
    assert [n for n in replay.notes if "never superseded while it ran" in n]


def test_zombie_end_says_how_soon_after_its_fenced_reply_it_stopped(hop: Hop) -> None:
    replay = hop.replay()
    [row] = [line for line in render(replay, []).splitlines() if line.startswith("0 ")]
    assert row.endswith("SIGSTOP -> SIGCONT -> exit 8 (0.5 s after fenced)")


def test_relaunch_resuming_from_a_zombie_commit_racing_its_open_passes(early: Hop) -> None:
    # the zombie's commit was in flight while B's open ran: either order is consistent
    early.calls[4] = call("A", "commit", 2.995, version(2, 1, AWS), token="tk1", upload="u2a")
    assert check(early.replay()) == []
