"""Lightning 2.6, written as for s3://, checkpointing to o41:// (docs/fsspec.md, Lightning).

The trainer (tests/support/trainers/lightning_fit.py) uses ``ModelCheckpoint(dirpath="o41://…",
every_n_train_steps=5, save_last=True)`` and ``trainer.fit(..., ckpt_path="last")`` from
its first launch on; it runs as a subprocess, so fencing ends it as it ends a real box.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.support.trainer_runs import artifact, start, versions, wait_for_version

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
pytest.importorskip("lightning", reason="lightning is not installed (pip install -e '.[test]')")

SCRIPT = "lightning_fit.py"


def launch(emu: Emulator, location: str, *args: str):
    return start(emu.client_env(), SCRIPT, location, *args)


def test_first_launch_starts_at_zero_and_each_save_is_one_version_with_last_ckpt(
        served_emulator: Emulator, o41_location: str) -> None:
    run = launch(served_emulator, o41_location, "--steps", "10", "--every", "5", "--top-k", "-1")
    assert run.wait_line(r"^resumed-at (\d+)").group(1) == "0"
    assert run.finish() == 0, run.output()
    found = versions(served_emulator.api, served_emulator.key, o41_location)
    assert [v["version"] for v in found] == ["step-00000005", "step-00000010"]
    for v in found:
        files = {f["name"] for f in o41_emulator_read(served_emulator, o41_location, v["version"])}
        assert files == {f"epoch=0-step={v['step']}.ckpt", "last.ckpt"} or files == {
            f"epoch=1-step={v['step']}.ckpt", "last.ckpt"}


def o41_emulator_read(emu: Emulator, location: str, version: str) -> list[dict]:
    import requests

    resp = requests.get(f"{emu.api}/versions/read", timeout=30,
                        params={"artifact": location[6:], "version": version},
                        headers={"Authorization": f"Bearer {emu.key}"})
    resp.raise_for_status()
    return resp.json()["files"]


@pytest.mark.slow
def test_killed_and_relaunched_resumes_at_the_last_checkpointed_global_step(
        served_emulator: Emulator, o41_location: str) -> None:
    first = launch(served_emulator, o41_location, "--steps", "400", "--every", "5",
                   "--sleep", "0.05")
    wait_for_version(served_emulator.api, served_emulator.key, o41_location, 10)
    first.kill()  # preempted: SIGKILL, nothing flushed
    last = versions(served_emulator.api, served_emulator.key, o41_location)[-1]["step"]
    again = launch(served_emulator, o41_location, "--steps", str(last + 5), "--every", "5")
    assert int(again.wait_line(r"^resumed-at (\d+)").group(1)) == last
    assert again.finish() == 0, again.output()
    steps = [v["step"] for v in versions(served_emulator.api, served_emulator.key, o41_location)]
    assert steps[-1] == last + 5 and steps == sorted(set(steps))


@pytest.mark.slow
@pytest.mark.parametrize("wake", ["before the relaunch's first save",
                                  "after the relaunch's first save"])
def test_zombie_stops_by_itself_and_none_of_its_later_steps_show(
        served_emulator: Emulator, o41_location: str, wake: str) -> None:
    zombie = launch(served_emulator, o41_location, "--steps", "400", "--every", "5",
                    "--sleep", "0.05")
    zombie.wait_line(r"^step 7$")
    zombie.pause()  # unreachable, not dead: it holds epoch 1 and will wake up
    old = artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"]
    relaunch = launch(served_emulator, o41_location, "--steps", "400", "--every", "5",
                      "--sleep", "0.5" if wake.startswith("before") else "0.05")
    relaunch.wait_line(r"^resumed-at 5$")
    if wake.startswith("after"):
        wait_for_version(served_emulator.api, served_emulator.key, o41_location, 10)
    zombie.resume()
    assert zombie.finish() == 8, zombie.output()
    now = artifact(served_emulator.api, served_emulator.key, o41_location)
    line = zombie.wait_line(r"^o41: fenced: ").string
    assert f"holder {now['holder']!r} at epoch {now['epoch']}" in line
    relaunch.kill()
    later = [v for v in versions(served_emulator.api, served_emulator.key, o41_location)
             if v["epoch"] == old and v["step"] > 5]
    assert later == [], f"the zombie's steps after the relaunch began show: {later}"


@pytest.mark.slow
def test_eval_job_reading_last_never_fences_the_trainer(served_emulator: Emulator,
                                                        o41_location: str) -> None:
    trainer = launch(served_emulator, o41_location, "--steps", "400", "--every", "5",
                     "--sleep", "0.05")
    wait_for_version(served_emulator.api, served_emulator.key, o41_location, 5)
    epoch = artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"]
    evaluation = start(served_emulator.client_env(), "lightning_eval.py", o41_location)
    assert evaluation.finish() == 0, evaluation.output()
    assert evaluation.wait_line(r"^validated step (\d+)")
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == epoch
    trainer.wait_line(r"^step 12$")  # still training
    trainer.kill()


@pytest.mark.slow
def test_fresh_fit_on_an_artifact_with_checkpoints_is_refused_at_launch(
        served_emulator: Emulator, o41_location: str) -> None:
    assert launch(served_emulator, o41_location, "--steps", "5", "--every", "5").finish() == 0
    fresh = launch(served_emulator, o41_location, "--steps", "10", "--every", "5",
                   "--ckpt-path", "none")
    assert fresh.finish() != 0
    assert "has_checkpoints" in fresh.output() or "HasCheckpoints" in fresh.output()
    assert "step 1" not in fresh.lines


@pytest.mark.slow
def test_default_root_dir_on_o41_fails_at_launch_naming_what_to_write(
        served_emulator: Emulator, o41_location: str) -> None:
    run = launch(served_emulator, o41_location, "--steps", "5", "--every", "5", "--root-dir")
    assert run.finish() != 0
    assert f"ModelCheckpoint(dirpath='{o41_location}')" in run.output()
    assert "step 1" not in run.lines
    assert versions(served_emulator.api, served_emulator.key, o41_location) == []


@pytest.mark.slow  # a preemption run (20 s): the fast tier keeps the one-process smoke run
def test_ddp_on_two_processes_killed_and_relaunched_resumes_on_both_ranks(
        served_emulator: Emulator, o41_location: str) -> None:
    run = launch(served_emulator, o41_location, "--steps", "200", "--every", "5",
                 "--sleep", "0.05", "--devices", "2")
    wait_for_version(served_emulator.api, served_emulator.key, o41_location, 15)
    run.kill()  # both ranks: rank 1 is rank 0's subprocess, in its process group
    latest = artifact(served_emulator.api, served_emulator.key, o41_location)["latest"]
    again = launch(served_emulator, o41_location, "--steps", str(int(latest[5:]) + 5),
                   "--every", "5", "--devices", "2")
    assert again.finish() == 0, again.output()
    resumed = [ln for ln in again.lines if ln.startswith("resumed-at ")]
    assert resumed == [f"resumed-at {int(latest[5:])}"] * 2, again.output()
    found = versions(served_emulator.api, served_emulator.key, o41_location)
    assert {v["epoch"] for v in found if v["step"] > int(latest[5:])} == {2}
