"""Multi-rank torch.distributed.checkpoint through ``o41://`` (torchrun, gloo on CPU).

Written as for ``s3://``: every rank writes its own shards with DCP's FsspecWriter, and the
checkpoint is ONE version of every rank's shards and ``.metadata`` (``o41.dcp``). The job
opens once; a rank killed mid-save leaves the previous latest; a zombie job, woken after
its relaunch, stops on every rank with exit code 8 and commits nothing.
"""

from __future__ import annotations

import re
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from trainer_runs import TRAINERS, Trainer, artifact, versions

if TYPE_CHECKING:
    from client_fixtures import Emulator

pytest_plugins = ["client_fixtures"]
pytest.importorskip("torch.distributed.checkpoint")
TORCHRUN = shutil.which("torchrun", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(TORCHRUN is None, reason="torchrun is not installed")


def torchrun(env: dict[str, str], ranks: int, location: str, *args: str) -> Trainer:
    """Start ``tests/trainers/dcp_ranks.py`` under torchrun, in a process group of its own."""
    import subprocess
    import threading

    command = [str(TORCHRUN), "--standalone", f"--nproc_per_node={ranks}", "--max_restarts=0",
               str(TRAINERS / "dcp_ranks.py"), location, *args]
    proc = subprocess.Popen(command, env={**env, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    trainer = Trainer(proc)
    trainer.pump = threading.Thread(target=trainer._pump, daemon=True)
    trainer.pump.start()
    return trainer


def files_of(emu: Emulator, location: str, version: str) -> list[str]:
    import requests

    resp = requests.get(f"{emu.api}/versions/read", timeout=30,
                        params={"artifact": location[6:], "version": version},
                        headers={"Authorization": f"Bearer {emu.key}"})
    resp.raise_for_status()
    return sorted(f["name"] for f in resp.json()["files"])


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_rank_shards_and_metadata_are_one_version_and_load_exact(
        o41_emulator: Emulator, o41_location: str, ranks: int) -> None:
    env = o41_emulator.client_env(O41_MODE="write")
    first = torchrun(env, ranks, o41_location, "--steps", "4", "--every", "2")
    assert first.finish() == 0, first.output()
    found = versions(o41_emulator.api, o41_emulator.key, o41_location)
    assert [(v["version"], v["epoch"]) for v in found] == [("step-00000002", 1),
                                                           ("step-00000004", 1)]
    assert files_of(o41_emulator, o41_location, "step-00000004") == [
        ".metadata", *(f"__{r}_0.distcp" for r in range(ranks))]
    again = torchrun(env, ranks, o41_location, "--steps", "6", "--every", "2")
    assert again.finish() == 0, again.output()
    for r in range(ranks):  # each rank checked every element it loaded
        assert f"rank {r} resumed-at 4" in again.output()
    assert [v["step"] for v in versions(o41_emulator.api, o41_emulator.key, o41_location)] \
        == [2, 4, 6]
    assert artifact(o41_emulator.api, o41_emulator.key, o41_location)["epoch"] == 2


def test_rank_killed_mid_save_leaves_the_previous_latest(o41_emulator: Emulator,
                                                         o41_location: str) -> None:
    env = o41_emulator.client_env(O41_MODE="write")
    job = torchrun(env, 2, o41_location, "--steps", "4", "--every", "2",
                   "--hang-rank", "1", "--hang-at", "4")
    job.wait_line(r"^rank 1 mid-save$")
    pid = int(job.wait_line(r"^rank 1 pid (\d+)$").group(1))
    import os

    os.kill(pid, signal.SIGKILL)
    assert job.finish() != 0
    assert [v["version"] for v in versions(o41_emulator.api, o41_emulator.key, o41_location)] \
        == ["step-00000002"]
    relaunch = torchrun(env, 2, o41_location, "--steps", "4", "--every", "2")
    assert relaunch.finish() == 0, relaunch.output()
    assert "rank 1 resumed-at 2" in relaunch.output()
    assert [v["step"] for v in versions(o41_emulator.api, o41_emulator.key, o41_location)] \
        == [2, 4]


def test_zombie_job_woken_after_its_relaunch_stops_on_every_rank(o41_emulator: Emulator,
                                                                 o41_location: str) -> None:
    env = o41_emulator.client_env(O41_MODE="write", O41_FENCE_CHECK="0.5")
    zombie = torchrun(env, 2, o41_location, "--steps", "8", "--every", "2",
                      "--hold-after", "2")
    for r in (0, 1):
        zombie.wait_line(rf"^rank {r} holding$")
    zombie.pause()
    try:
        relaunch = torchrun(env, 2, o41_location, "--steps", "4", "--every", "2")
        assert relaunch.finish() == 0, relaunch.output()
    finally:
        zombie.resume()
    zombie.finish()
    fenced = [ln for ln in zombie.lines if ln.startswith("o41: fenced: ")]
    assert len(fenced) == 2, zombie.output()  # one line from each rank, each exit 8
    assert re.search(r"exitcode\s*:\s*8", zombie.output()), zombie.output()
    assert [(v["step"], v["epoch"]) for v in versions(o41_emulator.api, o41_emulator.key,
                                                      o41_location)] == [(2, 1), (4, 2)]
