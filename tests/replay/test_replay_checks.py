"""Each check on a hand-made call log: the good hop passes, each breakage names its check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay.checks import check
from replay.proxy import Call
from replay.runner import BoxRun, Replay
from replay.scenario import Box, Preempt, Scenario

SIZE = 1000
AWS, GCP = {"cloud": "aws", "region": "us-east-1"}, {"cloud": "gcp", "region": "europe-west4"}


def call(box: str, op: str, t: float, reply: dict[str, Any] | None = None, status: int = 200,
         **request: Any) -> Call:
    return Call(box, op, t, t + 0.01, status, request, reply or {})


def version(step: int, epoch: int, location: dict[str, str]) -> dict[str, Any]:
    return {"version": f"step-{step:08d}", "step": step, "epoch": epoch, "size": SIZE,
            "location": location}


def opened(epoch: int, resume: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"epoch": epoch, "token": f"tk{epoch}", "resume_from": resume, "warnings": [],
            **extra}


def fail(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": code}}


class Hop:
    """A two-box hop, aws (A, a zombie) -> gcp (B), that passes every check until edited."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.places = {"A": "aws/us-east-1", "B": "gcp/europe-west4"}
        v1 = version(1, 1, AWS)
        self.calls = [
            call("A", "open", 0, opened(1), artifact="p/n", resume="latest"),
            call("A", "write", 1, {"upload": "u1"}, token="tk1", version="step-00000001"),
            call("A", "commit", 2, v1, token="tk1", upload="u1"),
            call("B", "open", 3, opened(2, {**v1, "cross_cloud": True},
                                       fenced={"epoch": 1, "holder": "h"}),
                 artifact="p/n", resume="latest"),
            call("B", "write", 4, {"upload": "u2"}, token="tk2", version="step-00000002"),
            call("B", "commit", 5, version(2, 2, GCP), token="tk2", upload="u2"),
            call("A", "write", 6, fail("fenced"), 409, token="tk1", version="step-00000002"),
        ]
        self.history = [version(1, 1, AWS), version(2, 2, GCP)]
        self.reads = [{"direction": "read", "version": "step-00000001", "place": GCP,
                       "route": "cross_cloud", "bytes": SIZE}]
        self.preempt = {"A": ("stop", 5.5), "B": (None, None)}
        self.exits: dict[str, tuple[float | None, int]] = {"A": (6.5, 8)}

    def replay(self) -> Replay:
        runs = []
        for box_id, place in self.places.items():
            mode, cont = self.preempt[box_id]
            box = Box(box_id, place, Preempt(after_checkpoints=1, mode=mode) if mode else None)
            log = self.tmp / f"box-{box_id}.log"
            log.touch()
            # a fenced zombie stops by itself (the client's exit code 8) soon after its refusal
            end, code = self.exits.get(box_id, (None, 0))
            runs.append(BoxRun(box, log, None, 0.0, ended=end,  # type: ignore[arg-type]
                               returncode=code, preempted=mode, continued_at=cont))
        scenario = Scenario("t", tuple(r.box for r in runs))
        return Replay(scenario, runs, self.calls, "p/n", self.history,
                      {"transfers": self.reads}, self.tmp)

    def checks(self) -> set[str]:
        return {v.check for v in check(self.replay())}


@pytest.fixture
def hop(tmp_path: Path) -> Hop:
    return Hop(tmp_path)


def test_good_hop_passes_every_check(hop: Hop) -> None:
    assert check(hop.replay()) == []


def test_fresh_open_refused_flagged_fresh_start(hop: Hop) -> None:
    hop.calls[3] = call("B", "open", 3, fail("has_checkpoints"), 409, artifact="p/n",
                        resume=None)
    hop.calls[4:6] = []
    [v] = [v for v in check(hop.replay()) if v.check == "fresh-start"]
    assert v.box == "B" and "refused" in v.message


def test_fresh_open_accepted_flagged_as_clobbering(hop: Hop) -> None:
    hop.calls[3] = call("B", "open", 3, opened(2), artifact="p/n", resume=None)
    hop.history = [version(2, 2, GCP)]
    violations = check(hop.replay())
    assert any(v.check == "fresh-start" and "clobbered" in v.message for v in violations)
    assert any(v.check == "history" and "step-00000001" in v.message for v in violations)


def test_relaunch_resumed_from_older_version_flagged(hop: Hop) -> None:
    hop.calls[3] = call("B", "open", 3, opened(2, version(0, 1, AWS)), artifact="p/n",
                        resume="latest")
    assert "not-resumed" in hop.checks()


def test_relaunch_restarting_from_scratch_flagged_not_resumed(hop: Hop) -> None:
    hop.calls[4] = call("B", "write", 4, fail("not_after_latest"), 409, token="tk2",
                        version="step-00000001")
    hop.calls[5:6] = []
    hop.history = hop.history[:1]
    assert hop.checks() == {"not-resumed"}


def test_relaunch_that_never_read_its_resume_flagged(hop: Hop) -> None:
    hop.reads = []
    assert hop.checks() == {"not-resumed"}


def test_zombie_late_commit_visible_flagged(hop: Hop) -> None:
    late = version(3, 1, AWS)
    hop.calls[6] = call("A", "commit", 6, late, token="tk1", upload="u3")
    hop.history.append(late)
    violations = check(hop.replay())
    assert any(v.check == "zombie-write" and "became visible" in v.message for v in violations)
    assert any(v.check == "history" and "older epoch" in v.message for v in violations)


def test_zombie_refused_with_other_code_than_fenced_flagged(hop: Hop) -> None:
    hop.calls[6] = call("A", "write", 6, fail("version_exists"), 409, token="tk1",
                        version="step-00000002")
    assert hop.checks() == {"zombie-write"}


def test_zombie_reopening_after_sigcont_flagged(hop: Hop) -> None:
    hop.calls.append(call("A", "open", 7, opened(3, fenced={"epoch": 2}), artifact="p/n",
                          resume="latest"))
    [v] = check(hop.replay())
    assert v.check == "zombie-write" and "fencing box B" in v.message


def test_zombie_writing_on_after_fenced_flagged(hop: Hop) -> None:
    hop.calls.append(call("A", "write", 7, fail("fenced"), 409, token="tk1",
                          version="step-00000003"))
    [v] = check(hop.replay())
    assert v.check == "zombie-write" and "already fenced" in v.message


def test_zombie_silent_after_sigcont_flagged(hop: Hop) -> None:
    del hop.calls[6]
    [v] = check(hop.replay())
    assert v.check == "zombie-write" and "no write after SIGCONT" in v.message


def test_write_outside_own_region_flagged_placement(hop: Hop) -> None:
    hop.calls[5] = call("B", "commit", 5, version(2, 2, AWS), token="tk2", upload="u2")
    hop.history[1] = version(2, 2, AWS)
    assert hop.checks() == {"placement"}


def test_unknown_place_needs_a_logged_warning(hop: Hop) -> None:
    hop.places["B"] = None  # type: ignore[assignment]
    hop.reads[0]["place"] = None
    warning = "checkpoints go to the fallback location aws/us-east-1"
    hop.calls[3].reply["warnings"].append(warning)
    hop.calls[5] = call("B", "commit", 5, version(2, 2, AWS), token="tk2", upload="u2")
    hop.history[1] = version(2, 2, AWS)
    [v] = check(hop.replay())
    assert v.check == "placement" and "did not log" in v.message
    (hop.tmp / "box-B.log").write_text(f"WARNING o41: p/n: {warning}\n")
    assert check(hop.replay()) == []


def test_relaunch_that_read_one_of_two_whole_checkpoints_resumed(hop: Hop) -> None:
    files = [{"name": "epoch=0-step=1.ckpt", "size": SIZE // 2},
             {"name": "last.ckpt", "size": SIZE // 2}]
    hop.calls[3].reply["resume_from"]["files"] = files
    hop.reads[0]["bytes"] = SIZE // 2
    assert hop.checks() == set()
    hop.reads[0]["bytes"] = SIZE // 2 - 1
    assert hop.checks() == {"not-resumed"}


def test_second_cross_cloud_read_flagged(hop: Hop) -> None:
    hop.reads[0]["bytes"] = 2 * SIZE
    assert hop.checks() == {"cross-cloud-reads"}


def test_cross_cloud_read_within_two_percent_of_the_size_passes(hop: Hop) -> None:
    hop.reads[0]["bytes"] = SIZE * 102 // 100
    assert hop.checks() == set()
    hop.reads[0]["bytes"] = SIZE * 103 // 100
    assert hop.checks() == {"cross-cloud-reads"}


def test_cross_cloud_read_no_hop_resumed_flagged(hop: Hop) -> None:
    hop.reads.append({"direction": "read", "version": "step-00000002", "place": AWS,
                      "route": "cross_cloud", "bytes": SIZE})
    [v] = check(hop.replay())
    assert v.check == "cross-cloud-reads" and "no relaunch" in v.message


def test_version_visible_without_commit_flagged_history(hop: Hop) -> None:
    hop.history.append(version(3, 1, AWS))
    assert "history" in hop.checks()


def test_box_crashing_before_preemption_flagged(hop: Hop) -> None:
    replay = hop.replay()
    replay.runs[1].returncode = 6
    assert {v.check for v in check(replay)} == {"box-exit"}
