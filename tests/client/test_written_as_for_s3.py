"""Lightning scripts written as for ``s3://``, with only the location changed to ``o41://``.

Each test is what an ML engineer writes for s3fs (Lightning 2.6 here; torch DCP and plain
fsspec in tests/client/test_written_as_for_s3_dcp_fsspec.py), run in this process against the
emulator with the client configured from the environment only (``O41_ARTIFACTS_API_URL``,
``O41_ARTIFACTS_API_KEY``), as docs/fsspec.md says. Where o41 cannot do what s3 does (a
committed version is immutable, steps only move forward), the test pins the one clear
error, with the contract's code, and that nothing was lost. Where fencing and exits
matter, the trainer runs as a subprocess (tests/support/trainer_runs.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import fsspec
import pytest

import o41

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
L = pytest.importorskip("lightning", reason="lightning is not installed (pip install -e '.[test]')")

from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from lightning.pytorch.plugins.io import AsyncCheckpointIO  # noqa: E402
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


@pytest.mark.parametrize("async_io", [False, True], ids=["sync", "AsyncCheckpointIO"])
def test_two_checkpoint_callbacks_on_one_dirpath_keep_every_file_of_a_step(
        o41_env: Emulator, o41_location: str, async_io: bool) -> None:
    best = ModelCheckpoint(dirpath=o41_location, monitor="val_loss", mode="min",
                           save_top_k=1, filename="best-{epoch}-{val_loss:.3f}")
    periodic = ModelCheckpoint(dirpath=o41_location, every_n_epochs=1, save_top_k=-1,
                               save_last=True)
    plugins = [AsyncCheckpointIO()] if async_io else []
    trainer(max_epochs=2, callbacks=[best, periodic], plugins=plugins).fit(
        Model(), data(), data(16), ckpt_path="last")
    assert ls(o41_location) == ["step-00000004", "step-00000008"]
    files = ls(f"{o41_location}/step-00000008")
    assert best.best_model_path.rsplit("/", 1)[-1] in files
    assert {"epoch=1-step=8.ckpt", "last.ckpt"} <= set(files) and len(files) == 3
    assert Model.load_from_checkpoint(best.best_model_path).hparams.lr == 0.01
    assert fsspec.filesystem("o41").uncommitted() == []


def test_save_on_exception_keeps_the_step_it_failed_at(o41_env: Emulator, o41_location: str
                                                       ) -> None:
    class Boom(Model):
        def training_step(self, batch: tuple, i: int) -> torch.Tensor:
            if self.trainer.global_step == 6:
                raise RuntimeError("boom")
            return super().training_step(batch, i)

    cb = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=4, save_on_exception=True)
    with pytest.raises(RuntimeError, match="boom"):
        trainer(max_steps=20, callbacks=[cb]).fit(Boom(), data(), ckpt_path="last")
    assert ls(o41_location) == ["step-00000004", "step-00000006"]


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
    checkpoints = ModelCheckpoint(dirpath=o41_location, every_n_train_steps=4, save_top_k=-1)
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

    # save_top_k=1 deletes the previous checkpoint when it exists by then; one still queued
    # for upload is not seen by Lightning's `fs.exists` and stays (so on s3 too)
    fit(8)
    assert ls(o41_location)[-1] == "step-00000008"
    assert ls(f"{o41_location}/step-00000008") == ["epoch=1-step=8.ckpt", "last.ckpt"]
    assert fit(12).global_step == 12
    assert ls(o41_location)[-1] == "step-00000012"
    fs = fsspec.filesystem("o41")
    assert fs.uncommitted() == []


# -- a trainer process: AsyncCheckpointIO killed, relaunched, fenced -------------------------


@pytest.mark.slow
def test_async_checkpoint_io_trainer_killed_relaunched_and_its_zombie_stopped(
        served_emulator: Emulator, o41_location: str) -> None:
    from tests.support.trainer_runs import artifact, start, versions, wait_for_version

    api, key = served_emulator.api, served_emulator.key
    zombie = start(served_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                   "400", "--every", "5", "--sleep", "0.05", "--async-io")
    wait_for_version(api, key, o41_location, 5)
    zombie.pause()  # unreachable, not dead: it holds the first epoch and will wake up
    old = artifact(api, key, o41_location)["epoch"]
    last = versions(api, key, o41_location)[-1]["step"]
    relaunch = start(served_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                     str(last + 10), "--every", "5", "--async-io")
    assert int(relaunch.wait_line(r"^resumed-at (\d+)").group(1)) == last
    assert relaunch.finish() == 0, relaunch.output()
    zombie.resume()
    assert zombie.finish() == 8, zombie.output()
    found = versions(api, key, o41_location)
    assert found[-1]["step"] == last + 10
    assert [v for v in found if v["epoch"] == old and v["step"] > last] == []


@pytest.mark.slow
def test_a_save_is_visible_once_the_next_step_runs_and_a_kill_then_resumes_there(
        served_emulator: Emulator, o41_location: str) -> None:
    import re

    from tests.support.trainer_runs import start, versions

    api, key = served_emulator.api, served_emulator.key
    first = start(served_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                  "400", "--every", "5", "--sleep", "0.1")
    first.wait_line(r"^step 11$")
    first.pause()
    printed = max(int(m.group(1)) for line in first.output().splitlines()
                  if (m := re.match(r"^step (\d+)$", line)))
    committed = versions(api, key, o41_location)[-1]["step"]
    # a save at step S commits as batch S+1 starts, before "step S+1" is printed
    assert committed >= 5 * ((printed - 1) // 5) >= 10
    first.kill()
    again = start(served_emulator.client_env(), "lightning_fit.py", o41_location, "--steps",
                  str(committed + 5), "--every", "5")
    assert int(again.wait_line(r"^resumed-at (\d+)").group(1)) == committed
    assert again.finish() == 0, again.output()
