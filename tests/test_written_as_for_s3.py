"""Scripts written as for ``s3://``, with only the location string changed to ``o41://``.

Each test is what an ML engineer writes for s3fs (Lightning 2.6, torch DCP, plain fsspec),
run in this process against the emulator with the client configured from the environment
only (``O41_ARTIFACTS_API_URL`` / ``O41_ARTIFACTS_API_KEY``), as docs/fsspec.md says. Where
o41 cannot do what s3 does (a committed version is immutable, steps only move forward),
the test pins the one clear error, with the contract's code, and that nothing was lost.
Fencing and exits are the subprocess trainers' (tests/test_lightning_trainer.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest

import o41

if TYPE_CHECKING:
    from client_fixtures import Emulator

pytest_plugins = ["client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
L = pytest.importorskip("lightning", reason="lightning is not installed (pip install -e '.[test]')")

import torch.distributed.checkpoint as dcp  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from lightning.pytorch.plugins.io import AsyncCheckpointIO  # noqa: E402
from torch.distributed.checkpoint.api import CheckpointException  # noqa: E402
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


class Model(L.LightningModule):
    def __init__(self, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch: tuple, _: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch: tuple, _: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def test_step(self, batch: tuple, _: int) -> None:
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def predict_step(self, batch: tuple, _: int) -> torch.Tensor:
        return self.layer(batch[0])

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def data(n: int = 32) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    return DataLoader(TensorDataset(torch.randn(n, 8, generator=g),
                                    torch.randn(n, 1, generator=g)), batch_size=8)


def trainer(**kwargs: object) -> L.Trainer:
    return L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, **kwargs)


def ls(location: str) -> list[str]:
    fs = fsspec.filesystem("o41")
    fs.invalidate_cache()
    return [p.rsplit("/", 1)[-1] for p in fs.ls(location, detail=False)]


# -- Lightning -------------------------------------------------------------------------------


def test_monitor_top_k_all_every_epoch_and_a_custom_filename_resume_with_last(
        o41_env: Emulator, o41_location: str) -> None:
    def fit(epochs: int) -> tuple[L.Trainer, ModelCheckpoint]:
        cb = ModelCheckpoint(dirpath=o41_location, save_top_k=-1, monitor="val_loss",
                             mode="min", every_n_epochs=1, save_last=True,
                             filename="{epoch}-{step}-{val_loss:.2f}")
        t = trainer(max_epochs=epochs, callbacks=[cb])
        t.fit(Model(), data(), data(16), ckpt_path="last")
        return t, cb

    first, _ = fit(2)
    assert first.global_step == 8 and ls(o41_location) == ["step-00000004", "step-00000008"]
    again, cb = fit(3)  # resumes at step 8 and trains one epoch more
    assert again.global_step == 12
    assert ls(o41_location) == ["step-00000004", "step-00000008", "step-00000012"]
    assert cb.best_model_path.startswith(f"{o41_location}/epoch=")
    best = Model.load_from_checkpoint(cb.best_model_path)
    assert best.hparams.lr == 0.01
    assert torch.load(fsspec.open(cb.last_model_path).open(), map_location="cpu",
                      weights_only=False)["global_step"] == 12


def test_save_last_link_makes_the_version_the_link_and_resumes(
        o41_env: Emulator, o41_location: str) -> None:
    def fit(steps: int) -> ModelCheckpoint:
        cb = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=4, save_last="link")
        trainer(max_steps=steps, callbacks=[cb]).fit(Model(), data(), ckpt_path="last")
        return cb

    cb = fit(8)
    assert cb.last_model_path == f"{o41_location}/epoch=1-step=8.ckpt"
    assert ls(f"{o41_location}/step-00000008") == ["epoch=1-step=8.ckpt"]  # no second copy
    fit(12)
    assert ls(o41_location)[-1] == "step-00000012"


def test_validate_test_predict_with_best_last_and_a_path_copied_from_ls(
        o41_env: Emulator, o41_location: str) -> None:
    cb = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=4, save_top_k=2,
                         monitor="val_loss", mode="min", save_last=True)
    t = trainer(max_steps=8, callbacks=[cb], val_check_interval=4)
    t.fit(Model(), data(), data(16), ckpt_path="last")
    fs = fsspec.filesystem("o41")
    copied = "o41://" + fs.ls(fs.ls(o41_location, detail=False)[0], detail=False)[0]
    for ckpt_path in ("best", "last", copied):
        assert t.validate(t.lightning_module, data(16), ckpt_path=ckpt_path)[0]["val_loss"] > 0
        assert t.test(t.lightning_module, data(16), ckpt_path=ckpt_path)[0]["test_loss"] > 0
        assert len(t.predict(t.lightning_module, data(16), ckpt_path=ckpt_path)) == 2
    for path in (copied, f"{o41_location}/last.ckpt", f"{o41_location}/latest/last.ckpt"):
        assert Model.load_from_checkpoint(path).hparams.lr == 0.01


def test_fit_from_an_older_checkpoint_of_its_own_artifact_is_refused_at_launch(
        o41_env: Emulator, o41_location: str) -> None:
    checkpoints = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=4)
    trainer(max_steps=8, callbacks=[checkpoints]).fit(Model(), data(), ckpt_path="last")
    older = f"{o41_location}/step-00000004/epoch=0-step=4.ckpt"
    again = trainer(max_steps=16, callbacks=[ModelCheckpoint(dirpath=o41_location,
                                                             every_n_train_steps=4)])
    with pytest.raises(o41.NotAfterLatest, match=r"ckpt_path='last', or fork") as info:
        again.fit(Model(), data(), ckpt_path=older)
    assert info.value.code == "not_after_latest" and again.global_step == 0
    assert ls(o41_location) == ["step-00000004", "step-00000008"]


def test_save_checkpoint_by_hand_at_a_step_already_saved_names_what_is_there(
        o41_env: Emulator, o41_location: str) -> None:
    t = trainer(max_steps=8, callbacks=[ModelCheckpoint(dirpath=o41_location,
                                                        every_n_train_steps=4,
                                                        save_last=True)])
    t.fit(Model(), data(), ckpt_path="last")
    with pytest.raises(o41.VersionExists, match=r"at global step 8: .*it holds") as info:
        t.save_checkpoint(f"{o41_location}/final.ckpt")
    assert info.value.code == "version_exists"
    assert ls(f"{o41_location}/step-00000008") == ["epoch=1-step=8.ckpt", "last.ckpt"]


def test_save_checkpoint_by_hand_and_weights_only_load_back(
        o41_env: Emulator, o41_location: str) -> None:
    cb = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=3,
                         save_weights_only=True)
    t = trainer(max_steps=4, callbacks=[cb])
    t.fit(Model(), data(), ckpt_path="last")
    t.save_checkpoint(f"{o41_location}/final.ckpt")  # step 4: no ModelCheckpoint save there
    assert ls(o41_location) == ["step-00000003", "step-00000004"]
    assert "optimizer_states" not in torch.load(fsspec.open(cb.best_model_path).open(),
                                                weights_only=False)
    assert Model.load_from_checkpoint(f"{o41_location}/final.ckpt").hparams.lr == 0.01


def test_async_checkpoint_io_commits_one_version_per_save_and_resumes(
        o41_env: Emulator, o41_location: str) -> None:
    def fit(steps: int) -> L.Trainer:
        cb = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=4, save_last=True)
        t = trainer(max_steps=steps, callbacks=[cb], plugins=[AsyncCheckpointIO()])
        t.fit(Model(), data(), ckpt_path="last")
        return t

    fit(8)
    assert ls(o41_location) == ["step-00000004", "step-00000008"]
    assert ls(f"{o41_location}/step-00000008") == ["epoch=1-step=8.ckpt", "last.ckpt"]
    assert fit(12).global_step == 12
    assert ls(o41_location)[-1] == "step-00000012"
    fs = fsspec.filesystem("o41")
    assert fs.uncommitted() == []


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
def test_rm_of_what_is_committed_is_refused_as_immutable_and_nothing_goes(
        o41_env: Emulator, o41_location: str, what: str) -> None:
    fs = fsspec.filesystem("o41")
    fs.pipe(f"{o41_location}/step-00000001/model.pt", b"m")
    target = {"file": f"{o41_location}/step-00000001/model.pt",
              "version": f"{o41_location}/step-00000001", "artifact": o41_location}[what]
    with pytest.raises(PermissionError, match="immutable") as info:
        fs.rm(target, recursive=what != "file")
    assert isinstance(info.value, o41.Immutable) and info.value.code == "version_exists"
    assert fs.cat_file(f"{o41_location}/step-00000001/model.pt") == b"m"


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


# -- a trainer process: AsyncCheckpointIO killed, relaunched, fenced -------------------------


def test_async_checkpoint_io_trainer_killed_relaunched_and_its_zombie_stopped(
        o41_emulator: Emulator, o41_location: str) -> None:
    from trainer_runs import artifact, start, versions, wait_for_version

    api, key = o41_emulator.api, o41_emulator.key
    zombie = start(o41_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                   "400", "--every", "5", "--sleep", "0.05", "--async-io")
    wait_for_version(api, key, o41_location, 5)
    zombie.pause()  # unreachable, not dead: it holds the first epoch and will wake up
    old = artifact(api, key, o41_location)["epoch"]
    last = versions(api, key, o41_location)[-1]["step"]
    relaunch = start(o41_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                     str(last + 10), "--every", "5", "--async-io")
    assert int(relaunch.wait_line(r"^resumed-at (\d+)").group(1)) == last
    assert relaunch.finish() == 0, relaunch.output()
    zombie.resume()
    assert zombie.finish() == 8, zombie.output()
    found = versions(api, key, o41_location)
    assert found[-1]["step"] == last + 10
    assert [v for v in found if v["epoch"] == old and v["step"] > last] == []


def test_a_save_is_visible_once_the_next_step_runs_and_a_kill_then_resumes_there(
        o41_emulator: Emulator, o41_location: str) -> None:
    import re

    from trainer_runs import start, versions

    api, key = o41_emulator.api, o41_emulator.key
    first = start(o41_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                  "400", "--every", "5", "--sleep", "0.1")
    first.wait_line(r"^step 11$")
    first.pause()
    printed = max(int(m.group(1)) for line in first.output().splitlines()
                  if (m := re.match(r"^step (\d+)$", line)))
    committed = versions(api, key, o41_location)[-1]["step"]
    # a save at step S commits as batch S+1 starts, before "step S+1" is printed
    assert committed >= 5 * ((printed - 1) // 5) >= 10
    first.kill()
    again = start(o41_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                  str(committed + 5), "--every", "5")
    assert int(again.wait_line(r"^resumed-at (\d+)").group(1)) == committed
    assert again.finish() == 0, again.output()
