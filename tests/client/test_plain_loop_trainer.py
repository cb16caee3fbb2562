"""A plain PyTorch loop that saves two files a step (tests/support/trainers/plain_loop.py),
unchanged from s3://: each step is one version of both files, keep-the-last-k bounds the store, and
a kill -9 or a SIGTERM and relaunch resume from a whole step to the same weights as a run
never interrupted (and as the same loop on a local directory)."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest

from tests.support.trainer_runs import start, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
pytest.importorskip("torch")

STEPS, EVERY, KEEP = 12, 2, 2
ARGS = ("--steps", str(STEPS), "--every", str(EVERY), "--keep", str(KEEP))


def done(output: str) -> tuple[int, str]:
    found = re.search(r"^done (\d+) (\S+)$", output, re.M)
    assert found, output
    return int(found.group(1)), found.group(2)


@pytest.fixture(scope="module")
def on_local_disk(tmp_path_factory: pytest.TempPathFactory, served_emulator: Emulator) -> str:
    """The weights of the same loop, never interrupted, on a local directory."""
    url = (tmp_path_factory.mktemp("plain") / "run").as_uri()
    trainer = start(served_emulator.client_env(), "plain_loop.py", url, *ARGS)
    assert trainer.finish() == 0, trainer.output()
    return done(trainer.output())[1]


def files_of(emu: Emulator, location: str) -> dict[int, list[str]]:
    fs = fsspec.filesystem("o41", api_url=emu.api, api_key=emu.key, mode="read",
                           skip_instance_cache=True)
    return {v["step"]: sorted(Path(p).name for p in fs.ls(f"{location}/{v['version']}",
                                                          detail=False))
            for v in versions(emu.api, emu.key, location)}


def test_plain_loop_saves_each_step_as_one_version_and_keeps_the_last_k(
        served_emulator: Emulator, o41_location: str, on_local_disk: str) -> None:
    trainer = start(served_emulator.client_env(), "plain_loop.py", o41_location, *ARGS)
    assert trainer.finish() == 0, trainer.output()
    assert done(trainer.output()) == (STEPS, on_local_disk)
    assert files_of(served_emulator, o41_location) == {10: ["model.pt", "optim.pt"],
                                                    12: ["model.pt", "optim.pt"]}
    assert "VersionExists" not in trainer.output()


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_plain_loop_stopped_and_relaunched_resumes_a_whole_step_to_the_same_weights(
        served_emulator: Emulator, o41_location: str, on_local_disk: str, how: int) -> None:
    env = served_emulator.client_env()
    first = start(env, "plain_loop.py", o41_location, *ARGS)
    first.wait_line(r"^saved 6$")
    first.proc.send_signal(how)
    first.finish()
    committed = files_of(served_emulator, o41_location)
    last = max(committed)
    assert last >= 6  # "saved 6" is printed once its listing committed it
    assert all(files == ["model.pt", "optim.pt"] for files in committed.values())
    again = start(env, "plain_loop.py", o41_location, *ARGS)
    again.wait_line(rf"^resumed-at {last}$")
    assert again.finish() == 0, again.output()
    assert done(again.output()) == (STEPS, on_local_disk)


def holders(emu: Emulator, location: str) -> dict[int, str]:
    return {v["step"]: v["holder"] for v in versions(emu.api, emu.key, location)}


@pytest.mark.slow
def test_zombie_woken_after_the_relaunchs_first_save_stops_and_commits_nothing(
        served_emulator: Emulator, o41_location: str, on_local_disk: str, tmp_path: Path
        ) -> None:
    env = served_emulator.client_env()
    (tmp_path / "resume").touch()
    (tmp_path / "2").touch()
    zombie = start(env, "plain_loop.py", o41_location, *ARGS, "--gates", str(tmp_path))
    zombie.wait_line(r"^waiting at 4$")  # frozen after committing step 4
    relaunch = start(env, "plain_loop.py", o41_location, *ARGS)
    relaunch.wait_line(r"^resumed-at 4$")
    assert relaunch.finish() == 0, relaunch.output()
    assert done(relaunch.output()) == (STEPS, on_local_disk)
    (tmp_path / "all").touch()  # the zombie wakes
    assert zombie.finish() == 8, zombie.output()
    assert "saved 6" not in zombie.output()
    assert set(holders(served_emulator, o41_location)) == {10, 12}
    assert len(set(holders(served_emulator, o41_location).values())) == 1


@pytest.mark.slow
def test_zombie_woken_between_the_relaunchs_read_and_first_save_stops_both_with_one_line(
        served_emulator: Emulator, o41_location: str, on_local_disk: str, tmp_path: Path
        ) -> None:
    """The relaunch read step 4; the zombie commits step 6 before the relaunch opens: the
    relaunch stops at its open (exit 8, one line naming `o41 run`), having fenced the
    zombie, and the next relaunch resumes from the zombie's step 6, to the same weights."""
    env = served_emulator.client_env()
    z, r = tmp_path / "zombie", tmp_path / "relaunch"
    z.mkdir()
    r.mkdir()
    (z / "resume").touch()
    (z / "2").touch()
    zombie = start(env, "plain_loop.py", o41_location, *ARGS, "--gates", str(z))
    zombie.wait_line(r"^waiting at 4$")
    relaunch = start(env, "plain_loop.py", o41_location, *ARGS, "--gates", str(r))
    relaunch.wait_line(r"^resumed-at 4$")
    relaunch.wait_line(r"^waiting at resume$")
    (z / "4").touch()
    zombie.wait_line(r"^waiting at 6$")  # step 6 committed after the relaunch's read
    (r / "all").touch()
    assert relaunch.finish() == 8, relaunch.output()
    line = relaunch.wait_line(r"^o41: fenced: .*O41_MODE=write.*$").group(0)
    assert "read step-00000004" in line and "committed step-00000006" in line
    assert "VersionExists" not in relaunch.output()
    (z / "all").touch()
    assert zombie.finish() == 8, zombie.output()
    assert "saved 8" not in zombie.output()
    third = start(env, "plain_loop.py", o41_location, *ARGS)
    third.wait_line(r"^resumed-at 6$")
    assert third.finish() == 0, third.output()
    assert done(third.output()) == (STEPS, on_local_disk)
