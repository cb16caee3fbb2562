"""The ``boxes:`` key of scenario files: parsed strictly, other keys left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.scenarios import default_dir
from replay.runner import absolute_args
from replay.scenario import (
    ResumeAfter,
    ScenarioError,
    bundled_dir,
    find_scenario,
    load_scenario,
    parse_boxes,
)

REPO = Path(__file__).resolve().parents[2]


def test_spot_hop_boxes_load_with_zombie_and_hops() -> None:
    scenario = load_scenario(find_scenario("spot-hop"))
    assert [b.id for b in scenario.boxes] == ["A", "B", "C"]
    a = scenario.boxes[0]
    assert a.place == "aws/us-east-1" and a.preempt is not None
    assert (a.preempt.mode, a.preempt.after_checkpoints) == ("stop", 3)
    assert a.preempt.resume_after == ResumeAfter(box="B", checkpoints=1)
    assert scenario.boxes[-1].preempt is None


def test_zombie_wakes_early_wakes_its_zombie_at_the_relaunchs_first_call() -> None:
    a, b = load_scenario(find_scenario("zombie-wakes-early")).boxes
    assert a.preempt is not None and a.preempt.mode == "stop"
    assert a.preempt.resume_after == ResumeAfter(box="B", calls=1)
    assert b.preempt is None


def test_loader_ignores_keys_it_does_not_own(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nrules: [FENCE-2]\nsteps:\n  - open: {}\n"
                    "boxes:\n  - {id: A, place: unknown}\n")
    scenario = load_scenario(path)
    assert scenario.name == "s" and scenario.boxes[0].place is None


def test_cluster_info_uses_skypilot_cloud_names() -> None:
    [aws, gcp, azure, other] = parse_boxes([
        {"id": "A", "place": "aws/us-east-1"}, {"id": "B", "place": "gcp/europe-west4"},
        {"id": "C", "place": "azure/westeurope"}, {"id": "D", "place": "lambda/us-west-1"}])
    assert [b.cluster_info()["cloud"] for b in (aws, gcp, azure, other)] == [
        "AWS", "GCP", "Azure", "Lambda"]
    assert set(aws.cluster_info()) == {"cluster_name", "cloud", "region", "zone"}


@pytest.mark.parametrize("boxes,message", [
    ([], "non-empty list"),
    ([{"id": "A"}, {"id": "A"}], "unique"),
    ([{"id": "A", "place": "aws"}], "cloud/region"),
    ([{"id": "A", "preempt": {"mode": "kill"}}], "after_checkpoints or after_seconds"),
    ([{"id": "A", "preempt": {"after_checkpoints": 0}}], ">= 1"),
    ([{"id": "A", "preempt": {"after_checkpoints": 1, "mode": "pause"}}], "kill or stop"),
    ([{"id": "A", "preempt": {"after_checkpoints": 1, "resume_after": {"seconds": 1}}}],
     "needs mode: stop"),
    ([{"id": "A", "preempt": {"after_checkpoints": 1, "mode": "stop",
                              "resume_after": {"box": "A"}}}], "launched after this one"),
    ([{"id": "A", "zone": "x"}], "unknown key"),
    ([{"id": "A", "preempt": {"after_checkpoints": 1, "mode": "stop",
                              "resume_after": {"box": "B", "calls": 1, "checkpoints": 1}}},
      {"id": "B"}], "not both"),
    ([{"id": "A", "preempt": {"after_checkpoints": 1, "mode": "stop",
                              "resume_after": {"box": "B", "calls": 0}}}, {"id": "B"}],
     "calls must be a number >= 1"),
])
def test_bad_boxes_refused_naming_box_and_key(boxes: list, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_boxes(boxes)


def test_file_without_boxes_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nsteps: []\n")
    with pytest.raises(ScenarioError, match="no boxes"):
        load_scenario(path)


def test_suite_and_harness_read_the_one_bundled_copy() -> None:
    assert bundled_dir() == default_dir()
    assert find_scenario("spot-hop") == find_scenario("spot-hop.yaml") == (
        bundled_dir() / "spot-hop.yaml")
    fixtures = REPO / "fixtures" / "scenarios"  # a checkout's path: a link, not a copy
    assert fixtures.is_symlink() and fixtures.resolve() == bundled_dir().resolve()


def test_unknown_scenario_name_lists_the_bundled_ones(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="spot-hop") as info:
        find_scenario("spot-hopp")
    assert "no such file" in str(info.value)
    with pytest.raises(ScenarioError):
        find_scenario(str(tmp_path / "spot-hop"))  # a path is never looked up by name


def test_command_paths_made_absolute_but_not_a_module_after_dash_m(tmp_path: Path) -> None:
    (tmp_path / "o41").mkdir()
    (tmp_path / "train.py").touch()
    assert absolute_args(["python", "-m", "o41", "run", "--", "python", "train.py"],
                         tmp_path) == ["python", "-m", "o41", "run", "--", "python",
                                       str(tmp_path / "train.py")]
