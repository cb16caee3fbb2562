"""Multi-rank torch.distributed.checkpoint through ``o41://`` (torchrun, gloo on CPU).

Written as for ``s3://``: every rank writes its own shards with DCP's FsspecWriter, and the
checkpoint is ONE version of every rank's shards and ``.metadata`` (``o41.adapters.dcp``). The job
opens once; a rank killed mid-save leaves the previous latest; a zombie job, woken after
its relaunch, stops on every rank with exit code 8 and commits nothing. With
``dcp.async_save``'s checkpoint process (``dcp_async_ranks.py``), that process writes under
its job's open, and a zombie woken as the relaunch starts never makes it crash.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.trainer_runs import TRAINERS, Trainer, artifact, o41_launcher, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
pytest.importorskip("torch.distributed.checkpoint")
TORCHRUN = shutil.which("torchrun", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(TORCHRUN is None, reason="torchrun is not installed")


class Job(Trainer):
    """A torchrun job; its ranks are sessions of their own, so they are signalled by pid."""

    ranks: int = 0

    def pids(self) -> list[int]:
        return [int(self.wait_line(rf"^rank {r} pid (\d+)$").group(1))
                for r in range(self.ranks)]

    def signal_all(self, signum: int) -> None:
        for pid in [self.proc.pid, *self.pids()]:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass


@contextmanager
def torchrun(env: dict[str, str], ranks: int, location: str, *args: str,
             script: str = "dcp_ranks.py", launcher: list[str] | None = None
             ) -> Iterator[Job]:
    """Run ``tests/support/trainers/<script>`` under torchrun (under ``launcher``, e.g.
    ``o41 run``); every process of it is killed when the block ends."""
    command = [*(launcher or []), str(TORCHRUN), "--standalone",
               f"--nproc_per_node={ranks}", "--max_restarts=0", str(TRAINERS / script),
               location, *args]
    proc = subprocess.Popen(command, env={**env, "PYTHONUNBUFFERED": "1",
                                          "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    job = Job(proc)
    job.ranks = ranks
    job.pump = threading.Thread(target=job._pump, daemon=True)
    job.pump.start()
    try:
        yield job
    finally:
        pids = [int(m.group(1)) for ln in list(job.lines)
                if (m := re.match(r"^rank \d+ pid (\d+)$", ln))]
        for pid in [proc.pid, *pids]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(30)


def files_of(emu: Emulator, location: str, version: str) -> list[str]:
    import requests

    resp = requests.get(f"{emu.api}/versions/read", timeout=30,
                        params={"artifact": location[6:], "version": version},
                        headers={"Authorization": f"Bearer {emu.key}"})
    resp.raise_for_status()
    return sorted(f["name"] for f in resp.json()["files"])


# Two ranks in the fast tier, three in the slow one (19 s more of torchrun).
@pytest.mark.parametrize("ranks", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_every_rank_shards_and_metadata_are_one_version_and_load_exact(
        served_emulator: Emulator, o41_location: str, ranks: int) -> None:
    env = served_emulator.client_env(O41_MODE="write")
    with torchrun(env, ranks, o41_location, "--steps", "4", "--every", "2") as first:
        assert first.finish() == 0, first.output()
    found = versions(served_emulator.api, served_emulator.key, o41_location)
    assert [(v["version"], v["epoch"]) for v in found] == [("step-00000002", 1),
                                                           ("step-00000004", 1)]
    assert files_of(served_emulator, o41_location, "step-00000004") == [
        ".metadata", *(f"__{r}_0.distcp" for r in range(ranks))]
    with torchrun(env, ranks, o41_location, "--steps", "6", "--every", "2") as again:
        assert again.finish() == 0, again.output()
    for r in range(ranks):  # each rank checked every element it loaded
        assert f"rank {r} resumed-at 4" in again.lines
    assert [v["step"] for v in versions(served_emulator.api, served_emulator.key, o41_location)] \
        == [2, 4, 6]
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [2, 3])
def test_rank_killed_mid_save_leaves_the_previous_latest(served_emulator: Emulator,
                                                         o41_location: str, ranks: int) -> None:
    env = served_emulator.client_env(O41_MODE="write")
    with torchrun(env, ranks, o41_location, "--steps", "4", "--every", "2",
                  "--hang-rank", "1", "--hang-at", "4") as job:
        job.wait_line(r"^rank 1 mid-save$")
        os.kill(job.pids()[1], signal.SIGKILL)
        assert job.finish() != 0
    listed = versions(served_emulator.api, served_emulator.key, o41_location)
    assert [v["version"] for v in listed] == ["step-00000002"]
    with torchrun(env, ranks, o41_location, "--steps", "4", "--every", "2") as relaunch:
        assert relaunch.finish() == 0, relaunch.output()
    assert "rank 1 resumed-at 2" in relaunch.lines
    assert [v["step"] for v in versions(served_emulator.api, served_emulator.key, o41_location)] \
        == [2, 4]


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [2, 3])
def test_zombie_job_woken_after_its_relaunch_stops_on_every_rank(
        served_emulator: Emulator, o41_location: str, ranks: int) -> None:
    env = served_emulator.client_env(O41_MODE="write", O41_FENCE_CHECK="0.5")
    with torchrun(env, ranks, o41_location, "--steps", "8", "--every", "2",
                  "--hold-after", "2") as zombie:
        for r in range(ranks):
            zombie.wait_line(rf"^rank {r} holding$")
        zombie.signal_all(signal.SIGSTOP)
        try:
            with torchrun(env, ranks, o41_location, "--steps", "4", "--every", "2") as relaunch:
                assert relaunch.finish() == 0, relaunch.output()
        finally:
            zombie.signal_all(signal.SIGCONT)
        zombie.finish()
    fenced = [ln for ln in zombie.lines if "o41: fenced: " in ln]
    assert len(fenced) == ranks, zombie.output()  # one line from each rank, each exit 8
    assert re.search(r"exitcode\s*:\s*8", zombie.output()), zombie.output()
    assert [(v["step"], v["epoch"]) for v in versions(served_emulator.api, served_emulator.key,
                                                      o41_location)] == [(2, 1), (4, 2)]


@pytest.mark.slow
def test_loads_of_latest_by_two_ranks_racing_a_two_rank_writer_never_mix(
        served_emulator: Emulator, o41_location: str) -> None:
    env = served_emulator.client_env(O41_MODE="write")
    with torchrun(env, 2, o41_location, "--steps", "1000", "--every", "1") as writer:
        writer.wait_line(r"^rank 0 saved 1$")
        with torchrun(served_emulator.client_env(), 2, o41_location, "--loads", "100",
                      script="dcp_rank_loads.py") as reader:
            assert reader.finish() == 0, reader.output()
        assert writer.proc.poll() is None, writer.output()  # it committed all along
    done = reader.wait_line(r"^loads 100 mixed (\d+) steps (\d+)$")
    assert done.group(1) == "0"
    assert int(done.group(2)) > 1, reader.output()  # the loads did race commits


def test_o41_run_in_front_of_torchrun_is_the_jobs_one_open(served_emulator: Emulator,
                                                           o41_location: str) -> None:
    env = served_emulator.client_env()
    with torchrun(env, 2, o41_location, "--steps", "2", "--every", "2",
                  launcher=o41_launcher(o41_location)) as job:
        assert job.finish() == 0, job.output()
    assert "o41 run: opened" in job.output()
    assert [(v["step"], v["epoch"]) for v in versions(served_emulator.api, served_emulator.key,
                                                      o41_location)] == [(2, 1)]
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1


@pytest.mark.slow
def test_async_save_in_a_checkpoint_process_fences_a_zombie_woken_as_the_relaunch_starts(
        served_emulator: Emulator, o41_location: str) -> None:
    """``dcp.async_save`` with the process-based checkpointer: DCP's checkpoint process is
    part of its rank's job, so its open is the job's open (the ranks' first touch, under
    O41_MODE=write), never a second one that fences its own ranks. The zombie, woken once
    the relaunch resumed, is fenced at its next save; the relaunch saves on."""
    env = served_emulator.client_env(O41_MODE="write", O41_FENCE_CHECK="0.5")
    script = "dcp_async_ranks.py"
    with torchrun(env, 2, o41_location, "--steps", "8", "--every", "2", "--hold-after", "2",
                  script=script) as zombie:
        for r in range(2):
            zombie.wait_line(rf"^rank {r} holding$")
        zombie.signal_all(signal.SIGSTOP)
        try:
            with torchrun(env, 2, o41_location, "--steps", "6", "--every", "2",
                          script=script) as relaunch:
                for r in range(2):
                    relaunch.wait_line(rf"^rank {r} resumed-at 2$")
                zombie.signal_all(signal.SIGCONT)
                assert relaunch.finish() == 0, relaunch.output()
        finally:
            zombie.signal_all(signal.SIGCONT)
        assert zombie.finish() != 0, zombie.output()
    assert "Fenced" in zombie.output() or "o41: fenced: " in zombie.output(), zombie.output()
    for job in (zombie, relaunch):
        assert "VersionExists" not in job.output() and "version_exists" not in job.output()
    assert [(v["step"], v["epoch"]) for v in versions(served_emulator.api, served_emulator.key,
                                                      o41_location)] == [(2, 1), (4, 2), (6, 2)]


@pytest.mark.slow
def test_async_save_relaunch_that_read_before_its_zombie_committed_stops_without_a_crash(
        served_emulator: Emulator, o41_location: str) -> None:
    """Without O41_MODE=write the relaunch's first act is a read, in its ranks, and its open
    comes with its first save, in DCP's checkpoint process. The zombie, woken in between,
    commits step 4: the relaunch's open (the job's, which knows what its ranks read) fences
    the zombie and stops the relaunch with the documented refusal, never version_exists."""
    env = served_emulator.client_env(O41_FENCE_CHECK="0.5")
    script = "dcp_async_ranks.py"
    with torchrun(env, 2, o41_location, "--steps", "8", "--every", "2", "--hold-after", "2",
                  "--hold-after", "4", script=script) as zombie:
        for r in range(2):
            zombie.wait_line(rf"^rank {r} holding$")
        zombie.signal_all(signal.SIGSTOP)
        try:
            with torchrun(env, 2, o41_location, "--steps", "6", "--every", "2",
                          "--hold-before-save", script=script) as relaunch:
                for r in range(2):
                    relaunch.wait_line(rf"^rank {r} waiting$")
                zombie.signal_all(signal.SIGCONT)
                for r in range(2):
                    zombie.wait_line(rf"^rank {r} saved 4$")
                relaunch.signal_all(signal.SIGCONT)
                assert relaunch.finish() != 0, relaunch.output()
        finally:
            zombie.signal_all(signal.SIGCONT)
        assert zombie.finish() != 0, zombie.output()
    assert re.search(r"read step-00000002, and then .* committed step-00000004",
                     " ".join(relaunch.output().split())), relaunch.output()
    assert "Fenced" in zombie.output() or "o41: fenced: " in zombie.output(), zombie.output()
    for job in (zombie, relaunch):
        assert "VersionExists" not in job.output() and "version_exists" not in job.output()
    assert [(v["step"], v["epoch"]) for v in versions(served_emulator.api, served_emulator.key,
                                                      o41_location)] == [(2, 1), (4, 1)]
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 2
