"""A trainer whose first act is reading ``latest`` opens only at its first save: a zombie
that commits in between is caught there, with one line, never as ``version_exists``
(``o41.writing.registry.moved_since_read``, docs/fsspec.md)."""

from __future__ import annotations

import subprocess
import sys
from functools import partial
from typing import TYPE_CHECKING

import pytest

import o41
from tests.support import client_helpers
from tests.support.deadlines import HANG_GUARD
from tests.support.trainer_runs import REPO, artifact, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


# Fencing raises here, and each close commits (commit_after=0).
make_fs = partial(client_helpers.make_fs, on_fenced="raise", commit_after=0)


def steps(emu: Emulator, location: str) -> list[tuple[int, str]]:
    return [(v["step"], v["holder"]) for v in versions(emu.api, emu.key, location)]


def test_zombie_commit_between_the_read_and_the_first_save_stops_the_relaunch(
        served_emulator: Emulator, o41_location: str) -> None:
    zombie, relaunch = make_fs(served_emulator, "zombie"), make_fs(served_emulator, "relaunch")
    zombie.pipe(f"{o41_location}/step-00000001/model.pt", b"one")
    assert relaunch.cat(f"{o41_location}/latest/model.pt") == b"one"  # the resume's read
    zombie.pipe(f"{o41_location}/step-00000002/model.pt", b"zombie's two")  # woken up
    with pytest.raises(o41.Fenced) as info:
        relaunch.pipe(f"{o41_location}/step-00000002/model.pt", b"relaunch's two")
    message = str(info.value)
    assert "\n" not in message and info.value.code == "fenced"
    assert "read step-00000001" in message and "committed step-00000002" in message
    assert "o41 run" in message and "O41_MODE=write" in message
    with pytest.raises(o41.Fenced):  # the zombie is fenced by the relaunch's open
        zombie.pipe(f"{o41_location}/step-00000003/model.pt", b"late")
    assert [s for s, _ in steps(served_emulator, o41_location)] == [1, 2]
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 2


def test_relaunch_that_read_the_latest_saves_when_nothing_moved(
        served_emulator: Emulator, o41_location: str) -> None:
    old, relaunch = make_fs(served_emulator, "old"), make_fs(served_emulator, "relaunch")
    old.pipe(f"{o41_location}/step-00000001/model.pt", b"one")
    assert relaunch.ls(o41_location, detail=False)[-1].endswith("step-00000001")
    relaunch.pipe(f"{o41_location}/step-00000002/model.pt", b"two")
    assert [s for s, _ in steps(served_emulator, o41_location)] == [1, 2]
    with pytest.raises(o41.Fenced):
        old.pipe(f"{o41_location}/step-00000003/model.pt", b"late")


def test_relaunch_caught_so_exits_8_with_one_line(served_emulator: Emulator,
                                                  o41_location: str) -> None:
    zombie = make_fs(served_emulator, "zombie")
    zombie.pipe(f"{o41_location}/step-00000001/model.pt", b"one")
    script = f"""
import sys, fsspec
fs = fsspec.filesystem("o41")
fs.cat("{o41_location}/latest/model.pt")
print("read", flush=True)
sys.stdin.readline()
fs.pipe("{o41_location}/step-00000002/model.pt", b"two")
print("trained on")
"""
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, text=True,
                            env=served_emulator.client_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == "read\n"
    zombie.pipe(f"{o41_location}/step-00000002/model.pt", b"zombie's two")
    out, err = proc.communicate("go\n", timeout=HANG_GUARD)
    assert proc.returncode == 8 and "trained on" not in out
    lines = [ln for ln in err.splitlines() if ln.startswith("o41: fenced: ")]
    assert len(lines) == 1 and "O41_MODE=write" in lines[0], err
    assert "VersionExists" not in err and "Traceback" not in err
