"""torch.distributed.checkpoint through o41:// with the real library (docs/fsspec.md, DCP).

``dcp.save(state, checkpoint_id="o41://P/N/step-…")`` commits one version when DCP renames
its ``.metadata`` into place; ``dcp.load(state, checkpoint_id="o41://P/N/latest")`` reads
one version, whatever commits meanwhile.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

import o41
from tests.support.deadlines import HANG_GUARD
from tests.support.trainer_runs import artifact, o41_launcher, start, versions, wait_for_version

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
dcp = pytest.importorskip("torch.distributed.checkpoint")
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")


def test_save_commits_one_version_and_load_of_latest_is_exact(o41_env: Emulator,
                                                               o41_location: str) -> None:
    state = {"w": torch.arange(1000, dtype=torch.float32), "step": torch.tensor(100)}
    dcp.save(state, checkpoint_id=f"{o41_location}/step-00000100")
    found = versions(o41_env.api, o41_env.key, o41_location)
    assert [v["version"] for v in found] == ["step-00000100"]
    loaded = {"w": torch.zeros(1000), "step": torch.tensor(0)}
    dcp.load(loaded, checkpoint_id=f"{o41_location}/latest")
    assert torch.equal(loaded["w"], state["w"]) and int(loaded["step"]) == 100


@pytest.mark.skipif(not hasattr(dcp, "async_save"), reason="this torch has no dcp.async_save")
def test_async_save_commits_one_version_when_its_future_is_done(o41_env: Emulator,
                                                                o41_location: str) -> None:
    future = dcp.async_save({"w": torch.arange(10.0)},
                            checkpoint_id=f"{o41_location}/step-00000003")
    future.result(timeout=HANG_GUARD)
    assert [v["version"] for v in versions(o41_env.api, o41_env.key, o41_location)] == [
        "step-00000003"]


def test_loads_of_latest_racing_a_committing_writer_never_mix_versions(
        o41_env: Emulator, o41_location: str) -> None:
    writer = start(o41_env.client_env(), "dcp_writer.py", o41_location, "--saves", "25")
    writer.wait_line(r"^saved 1$")
    loads, seen, mixed = 0, set(), []
    while loads < 100 or writer.proc.poll() is None:
        state = {name: torch.zeros(64, 256) for name in "abc"} | {"step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=f"{o41_location}/latest")
        values = {float(state[n].unique()[0]) for n in "abc"} | {float(state["step"])}
        if len(values) != 1 or any(len(state[n].unique()) != 1 for n in "abc"):
            mixed.append(values)
        seen.add(int(state["step"]))
        loads += 1
    assert writer.finish() == 0, writer.output()
    assert mixed == [], f"{len(mixed)} of {loads} loads mixed versions: {mixed[:5]}"
    assert len(seen) > 1, "the loads never saw a newer version: the race did not happen"


def test_saves_from_helper_threads_share_the_launch_and_fence_nobody(
        o41_env: Emulator, o41_location: str) -> None:
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

    def save(step: int) -> None:
        dcp.save({"w": torch.full((8,), float(step))},
                 storage_writer=FsspecWriter(f"{o41_location}/step-{step:08d}", thread_count=3))

    save(1)
    helper = threading.Thread(target=save, args=(2,))
    helper.start()
    helper.join()
    save(3)
    found = versions(o41_env.api, o41_env.key, o41_location)
    assert [v["step"] for v in found] == [1, 2, 3]
    assert {v["epoch"] for v in found} == {1}
    assert artifact(o41_env.api, o41_env.key, o41_location)["epoch"] == 1


def test_fenced_save_raises_checkpoint_exception_carrying_fenced(o41_env: Emulator,
                                                                 o41_location: str) -> None:
    from torch.distributed.checkpoint.api import CheckpointException

    dcp.save({"w": torch.ones(4)}, checkpoint_id=f"{o41_location}/step-00000001")
    o41.open(o41_location, resume="latest", holder="a-newer-launch")
    with pytest.raises(CheckpointException) as info:
        dcp.save({"w": torch.ones(4)}, checkpoint_id=f"{o41_location}/step-00000002")
    # DCP keeps each rank's failure as (exception, stack summary)
    causes = [f[0] if isinstance(f, tuple) else f for f in info.value.failures.values()]
    assert any(isinstance(c, o41.Fenced) and c.by_holder == "a-newer-launch" for c in causes)
    assert [v["step"] for v in versions(o41_env.api, o41_env.key, o41_location)] == [1]


@pytest.mark.slow
def test_zombie_under_o41_run_is_stopped_and_none_of_its_later_steps_show(
        served_emulator: Emulator, o41_location: str) -> None:
    args = (o41_location, "--steps", "400", "--every", "5")
    zombie = start(served_emulator.client_env(), "dcp_train.py", *args, "--sleep", "0.05",
                   launcher=o41_launcher(o41_location))
    zombie.wait_line(r"^step 7$")
    zombie.pause()
    old = artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"]
    relaunch = start(served_emulator.client_env(), "dcp_train.py", *args, "--sleep", "0.5",
                     launcher=o41_launcher(o41_location))
    assert relaunch.wait_line(r"^resumed-at (\d+)").group(1) == "5"  # fenced at launch
    zombie.resume()
    assert zombie.finish() == 8, zombie.output()
    assert zombie.wait_line(r"fenced: .* at epoch (\d+)").group(1) == str(old + 1)
    relaunch.kill()
    later = [v for v in versions(served_emulator.api, served_emulator.key, o41_location)
             if v["epoch"] == old and v["step"] > 5]
    assert later == []
    wait_for_version(served_emulator.api, served_emulator.key, o41_location, 5)
