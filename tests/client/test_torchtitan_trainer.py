"""torchtitan 0.3.0's own ``CheckpointManager`` through ``o41://``, unchanged (gloo, CPU).

It hard-codes ``step-{step}`` folders, finds the last step by ``re.search(r"step-(\\d+)")``
over ``fs.ls`` of its folder, and purges all but ``keep_latest_k`` with
``fs.rm(path, recursive=True)`` on a thread of its own. The trainer
(tests/support/trainers/torchtitan_train.py) runs as a subprocess: it saves, purges, is killed and
relaunched, and a zombie woken after the relaunch's first save (or before it, under
``o41 run``) stops with exit 8 and commits and deletes nothing. A relaunch trains to the
same weights as a run never interrupted.

torchtitan is not in ``[test]``: its ``datasets`` pin needs fsspec<=2026.2.0. The trainer
needs only torchtitan with ``tyro`` and ``spmd_types``, installed without the rest.
"""

from __future__ import annotations

import importlib.util
import re
import secrets
import time
from typing import TYPE_CHECKING

import pytest

from tests.support.trainer_runs import WAIT, o41_launcher, start, versions, wait_for_version

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
_MISSING = [m for m in ("torch", "torchtitan", "tyro", "spmd_types")
            if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(_MISSING), reason=f"{', '.join(_MISSING)} not installed: pip install --no-deps "
    "torchtitan==0.3.0 spmd_types==0.2.3 && pip install tyro (torchtitan's datasets pin "
    "needs fsspec<=2026.2.0, so it is not in [test])")

STEPS, EVERY, KEEP = 12, 2, 2
ARGS = ("--steps", str(STEPS), "--every", str(EVERY), "--keep", str(KEEP))


def steps_of(emu: Emulator, location: str) -> list[int]:
    return [v["step"] for v in versions(emu.api, emu.key, location)]


def purged_to_keep(emu: Emulator, location: str) -> None:
    """Wait until the purge thread has left the newest ``KEEP`` versions alone."""
    deadline = time.monotonic() + WAIT
    while len(steps := steps_of(emu, location)) > KEEP:
        if time.monotonic() > deadline:
            raise AssertionError(f"{location}: still {steps} after the purge")
        time.sleep(0.2)


def done(output: str) -> tuple[int, str]:
    found = re.search(r"^done (\d+) (\S+)$", output, re.M)
    assert found, output
    return int(found.group(1)), found.group(2)


@pytest.fixture(scope="module")
def uninterrupted(served_emulator: Emulator) -> str:
    """The weights of a run never interrupted, by their checksum."""
    location = f"o41://tests/titan-whole-{secrets.token_hex(4)}"
    trainer = start(served_emulator.client_env(), "torchtitan_train.py", location, *ARGS)
    assert trainer.finish() == 0, trainer.output()
    return done(trainer.output())[1]


def test_checkpoint_manager_saves_and_purges_to_keep_latest_k(
        served_emulator: Emulator, o41_location: str, uninterrupted: str) -> None:
    trainer = start(served_emulator.client_env(), "torchtitan_train.py", o41_location, *ARGS)
    assert trainer.finish() == 0, trainer.output()
    assert done(trainer.output()) == (STEPS, uninterrupted)
    # the purge runs after every save but the last one: the newest k, and the last save
    assert steps_of(served_emulator, o41_location) == [8, 10, 12]
    assert "failed to delete" not in trainer.output()


@pytest.mark.slow
def test_killed_and_relaunched_resumes_from_the_last_step_to_the_same_weights(
        served_emulator: Emulator, o41_location: str, uninterrupted: str) -> None:
    env = served_emulator.client_env()
    first = start(env, "torchtitan_train.py", o41_location, *ARGS)
    first.wait_line(r"^saved 6$")
    first.kill()  # kill -9: whatever it had not committed is not visible
    last = steps_of(served_emulator, o41_location)[-1]
    assert last >= 6
    again = start(env, "torchtitan_train.py", o41_location, *ARGS)
    again.wait_line(rf"^resumed-at {last}$")
    assert again.finish() == 0, again.output()
    assert done(again.output()) == (STEPS, uninterrupted)
    assert steps_of(served_emulator, o41_location) == [8, 10, 12]


@pytest.mark.slow
def test_zombie_woken_after_the_relaunch_saved_stops_and_changes_nothing(
        served_emulator: Emulator, o41_location: str, uninterrupted: str) -> None:
    env = served_emulator.client_env()
    zombie = start(env, "torchtitan_train.py", o41_location, *ARGS)
    zombie.wait_line(r"^saved 4$")
    zombie.pause()
    resumed = steps_of(served_emulator, o41_location)[-1]
    relaunch = start(env, "torchtitan_train.py", o41_location, *ARGS)
    relaunch.wait_line(rf"^resumed-at {resumed}$")
    relaunch.wait_line(rf"^saved {resumed + EVERY}$")  # its first write opened: fenced
    wait_for_version(served_emulator.api, served_emulator.key, o41_location, resumed + EVERY)
    # Its purge thread deletes beyond the newest KEEP after that save: paused before the
    # delete lands, the relaunch's own purge would show as the zombie's change.
    purged_to_keep(served_emulator, o41_location)
    relaunch.pause()
    before = steps_of(served_emulator, o41_location)
    zombie.resume()
    assert zombie.finish() == 8, zombie.output()
    assert "o41: fenced" in zombie.output()
    assert steps_of(served_emulator, o41_location) == before
    relaunch.resume()
    assert relaunch.finish() == 0, relaunch.output()
    assert done(relaunch.output()) == (STEPS, uninterrupted)


@pytest.mark.slow
def test_zombie_woken_before_the_relaunch_saved_under_o41_run_stops(
        served_emulator: Emulator, o41_location: str, uninterrupted: str) -> None:
    env = served_emulator.client_env()
    zombie = start(env, "torchtitan_train.py", o41_location, *ARGS)
    zombie.wait_line(r"^saved 4$")
    zombie.pause()
    resumed = steps_of(served_emulator, o41_location)[-1]
    relaunch = start(env, "torchtitan_train.py", o41_location, *ARGS,
                     launcher=o41_launcher(o41_location))  # opens, so fences, at launch
    relaunch.wait_line(rf"^resumed-at {resumed}$")
    relaunch.pause()
    zombie.resume()  # before the relaunch's first save
    assert zombie.finish() == 8, zombie.output()
    assert steps_of(served_emulator, o41_location)[-1] == resumed
    relaunch.resume()
    assert relaunch.finish() == 0, relaunch.output()
    assert done(relaunch.output()) == (STEPS, uninterrupted)
    assert steps_of(served_emulator, o41_location) == [8, 10, 12]
