"""DCP and plain fsspec calls written as for ``s3://``, with only the location changed.

The Lightning half, and what these tests share, is in tests/client/test_written_as_for_s3.py:
each test is what an ML engineer writes for s3fs, run in this process against the
emulator, the client configured from the environment only. Where o41 cannot do what s3
does (committed versions are immutable, steps only move forward), the test pins the one
clear error, with the contract's code, and that nothing was lost.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest

import o41

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")

import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed.checkpoint.api import CheckpointException  # noqa: E402
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict  # noqa: E402


def ls(location: str) -> list[str]:
    fs = fsspec.filesystem("o41")
    fs.invalidate_cache()
    return [p.rsplit("/", 1)[-1] for p in fs.ls(location, detail=False)]


# -- torch.distributed.checkpoint -----------------------------------------------------------


def model_and_optim() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4))
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def test_dcp_loop_with_state_dict_helpers_then_load_a_named_step(
        o41_env: Emulator, o41_location: str) -> None:
    model, optim = model_and_optim()
    saved = {}
    for step in range(10, 40, 10):
        model(torch.randn(2, 16)).sum().backward()
        optim.step()
        msd, osd = get_state_dict(model, optim)
        dcp.save({"model": msd, "optim": osd, "step": step},
                 checkpoint_id=f"{o41_location}/step-{step:08d}")
        saved[step] = {k: v.clone() for k, v in model.state_dict().items()}
    again, again_optim = model_and_optim()
    msd, osd = get_state_dict(again, again_optim)
    state = {"model": msd, "optim": osd, "step": 0}
    dcp.load(state, checkpoint_id=f"{o41_location}/step-00000020")
    set_state_dict(again, again_optim, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    assert state["step"] == 20
    assert all(torch.equal(v, saved[20][k]) for k, v in again.state_dict().items())


def test_dcp_load_of_the_artifact_itself_reads_the_newest_commit(
        o41_env: Emulator, o41_location: str) -> None:
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

    dcp.save({"w": torch.ones(3)}, checkpoint_id=f"{o41_location}/step-00000001")
    state = {"w": torch.zeros(3)}
    dcp.load(state, checkpoint_id=o41_location)
    assert torch.equal(state["w"], torch.ones(3))
    # another launch (another holder) commits step 2; this process goes on loading
    dcp.save({"w": torch.full((3,), 2.0)}, storage_writer=FsspecWriter(
        f"{o41_location}/step-00000002", thread_count=2, holder="box-b"))
    dcp.load(state, checkpoint_id=o41_location)
    assert torch.equal(state["w"], torch.full((3,), 2.0))


def cause(exc: CheckpointException) -> BaseException:
    failure = next(iter(exc.failures.values()))
    return failure[0] if isinstance(failure, tuple) else failure


@pytest.mark.filterwarnings("ignore:Detected an existing checkpoint")  # DCP's own warning
@pytest.mark.parametrize(("step", "error", "code"), [
    (20, o41.VersionExists, "version_exists"), (15, o41.NotAfterLatest, "not_after_latest")])
def test_dcp_save_into_a_committed_or_older_step_is_refused_before_its_shards(
        o41_env: Emulator, o41_location: str, step: int, error: type, code: str) -> None:
    model, _ = model_and_optim()
    dcp.save({"m": model.state_dict()}, checkpoint_id=f"{o41_location}/step-00000020")
    fs = fsspec.filesystem("o41")
    with pytest.raises(CheckpointException) as info:
        dcp.save({"m": model.state_dict()}, checkpoint_id=f"{o41_location}/step-{step:08d}")
    assert isinstance(cause(info.value), error) and cause(info.value).code == code
    assert fs.uncommitted() == []  # refused at the first shard's open: nothing staged
    assert ls(o41_location) == ["step-00000020"]


def test_dcp_save_into_the_artifact_itself_names_the_version_form(
        o41_env: Emulator, o41_location: str) -> None:
    with pytest.raises(CheckpointException) as info:
        dcp.save({"w": torch.ones(2)}, checkpoint_id=o41_location)
    assert isinstance(cause(info.value), o41.ConfigError)
    assert f"checkpoint_id='{o41_location}/step-XXXXXXXX'" in str(cause(info.value))


# -- plain fsspec, as with s3fs --------------------------------------------------------------


def test_the_s3fs_calls_of_a_training_script(o41_env: Emulator, o41_location: str,
                                            tmp_path: Path) -> None:
    src = tmp_path / "ckpt"
    (src / "sub").mkdir(parents=True)
    torch.save({"w": torch.arange(4)}, src / "model.pt")
    (src / "sub" / "cfg.json").write_text('{"a": 1}')
    fs = fsspec.filesystem("o41")
    fs.makedirs(o41_location, exist_ok=True)
    fs.makedirs(f"{o41_location}/step-00000010", exist_ok=True)
    fs.put(str(src), f"{o41_location}/step-00000010", recursive=True)
    fs.put(f"{src}/", f"{o41_location}/step-00000020/", recursive=True)
    art, v10 = o41_location[6:], f"{o41_location[6:]}/step-00000010"
    assert fs.ls(o41_location, detail=False) == [v10, f"{art}/step-00000020"]
    assert fs.glob(f"{o41_location}/*") == [v10, f"{art}/step-00000020"]
    assert fs.find(f"{o41_location}/step-00000010") == [f"{v10}/model.pt",
                                                          f"{v10}/sub/cfg.json"]
    model_size = (src / "model.pt").stat().st_size
    assert fs.du(o41_location) == 2 * (model_size + 8)
    assert fs.info(f"{o41_location}/step-00000010/model.pt")["size"] == model_size
    for path, kind in ((o41_location, "dir"), (f"{o41_location}/step-00000010", "dir"),
                       (f"{o41_location}/step-00000010/model.pt", "file")):
        assert (fs.exists(path), fs.isdir(path), fs.isfile(path)) == (
            True, kind == "dir", kind == "file")
    assert not fs.exists(f"{o41_location}/step-00000099")
    fs.get(f"{o41_location}/step-00000010", str(tmp_path / "back"), recursive=True)
    assert sorted(str(p.relative_to(tmp_path / "back")) for p in (tmp_path / "back").rglob(
        "*") if p.is_file()) == ["model.pt", os.path.join("sub", "cfg.json")]
    with fs.open(f"{o41_location}/step-00000010/model.pt", "rb") as f:
        assert torch.equal(torch.load(f, map_location="cpu")["w"], torch.arange(4))
    loaded = torch.load(fsspec.open(f"{o41_location}/latest/model.pt").open(),
                        map_location="cpu")
    assert torch.equal(loaded["w"], torch.arange(4))
    cfg = f"{o41_location}/step-00000010/sub/cfg.json"
    assert fs.cat_file(cfg) == b'{"a": 1}' and fs.head(cfg, 3) == b'{"a'
    assert fs.tail(cfg, 3) == b" 1}" and fs.size(cfg) == 8
    assert fs.sizes([cfg, f"{o41_location}/step-00000010/model.pt"]) == [8, model_size]
    assert fs.checksum(cfg) != fs.checksum(f"{o41_location}/step-00000010/model.pt")
    assert fs.ukey(cfg) == fsspec.filesystem("o41", skip_instance_cache=True).ukey(cfg)
    assert fs.modified(o41_location) == fs.modified(f"{o41_location}/step-00000020")
    assert fs.modified(cfg) <= fs.modified(o41_location)


@pytest.mark.parametrize("what", ["file", "version", "artifact"])
def test_rm_of_the_latest_or_the_artifact_is_refused_and_nothing_goes(
        o41_env: Emulator, o41_location: str, what: str) -> None:
    fs = fsspec.filesystem("o41")
    fs.pipe(f"{o41_location}/step-00000001/model.pt", b"m")
    fs.commit_pending()  # the step is the latest now
    target = {"file": f"{o41_location}/step-00000001/model.pt",
              "version": f"{o41_location}/step-00000001", "artifact": o41_location}[what]
    with pytest.raises(PermissionError) as info:
        fs.rm(target, recursive=what != "file")
    if what == "artifact":
        assert isinstance(info.value, o41.Immutable) and info.value.code == "version_exists"
    else:
        assert isinstance(info.value, o41.IsLatest) and info.value.code == "is_latest"
    assert fs.cat_file(f"{o41_location}/step-00000001/model.pt") == b"m"


def test_rm_of_an_older_version_deletes_it_as_on_s3(o41_env: Emulator, o41_location: str
                                                    ) -> None:
    fs = fsspec.filesystem("o41")
    for step in (1, 2, 3):
        fs.pipe(f"{o41_location}/step-{step:08d}/model.pt", b"m")
    fs.rm(f"{o41_location}/step-{1:08d}", recursive=True)
    assert ls(o41_location) == ["step-00000002", "step-00000003"]


def test_rm_of_a_path_that_names_nothing_is_file_not_found(
        o41_env: Emulator, o41_location: str) -> None:
    fs = fsspec.filesystem("o41")
    fs.pipe(f"{o41_location}/step-00000001/model.pt", b"m")
    with pytest.raises(FileNotFoundError):
        fs.rm(f"{o41_location}/step-00000002/model.pt")


def test_pipe_of_several_files_commits_one_version(o41_env: Emulator, o41_location: str
                                                    ) -> None:
    fs = fsspec.filesystem("o41")
    fs.pipe({f"{o41_location}/step-00000005/a.bin": b"1",
             f"{o41_location}/step-00000005/b.bin": b"2"})
    assert ls(f"{o41_location}/step-00000005") == ["a.bin", "b.bin"]
