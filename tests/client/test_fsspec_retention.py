"""``fs.rm`` of committed versions (VER-7): keep-the-last-k bounds the store, as on s3.

The latest is never deleted (``is_latest``); a process that only read holds no open and
deletes nothing; a fenced zombie deletes nothing; a load begun before a delete completes.
Lightning's own top-k deletes run in tests/client/test_written_as_for_s3.py style below, with the
real Lightning.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import fsspec
import pytest

import o41
from tests.support.client_helpers import make_fs

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


def names(fs: fsspec.AbstractFileSystem, location: str) -> list[str]:
    return [p.rsplit("/", 1)[-1] for p in fs.ls(location, detail=False)]


def stored_bytes(fs: fsspec.AbstractFileSystem, location: str) -> int:
    """The bytes of the artifact's versions (``versions/list``)."""
    return sum(int(v["size"]) for v in fs.api.list_versions(location[len("o41://"):]))


def test_rm_of_a_version_that_is_not_the_latest_deletes_it(served_emulator: Emulator,
                                                           o41_location: str) -> None:
    fs = make_fs(served_emulator)
    for step in (1, 2, 3):
        fs.pipe_file(f"{o41_location}/step-{step}/model.pt", b"m" * 100)
    fs.commit_pending()
    before = stored_bytes(fs, o41_location)
    fs.rm(f"{o41_location}/step-1", recursive=True)
    fs.rm(f"{o41_location}/step-00000002")
    assert names(fs, o41_location) == ["step-00000003"]
    assert stored_bytes(fs, o41_location) == before - 200
    with pytest.raises(FileNotFoundError):
        make_fs(served_emulator).cat_file(f"{o41_location}/step-00000001/model.pt")
    with pytest.raises(FileNotFoundError):
        fs.rm(f"{o41_location}/step-1", recursive=True)


def test_rm_of_the_latest_is_refused_with_is_latest_and_keeps_it(served_emulator: Emulator,
                                                                 o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-1/model.pt", b"m")
    fs.pipe_file(f"{o41_location}/step-2/model.pt", b"m")
    fs.commit_pending()
    for path in (f"{o41_location}/step-2", f"{o41_location}/latest",
                 f"{o41_location}/step-2/model.pt"):
        with pytest.raises(o41.IsLatest) as info:
            fs.rm(path, recursive=True)
        assert info.value.code == "is_latest" and isinstance(info.value, PermissionError)
        assert "\n" not in str(info.value) and "step-00000002 is the latest" in str(info.value)
    assert names(fs, o41_location) == ["step-00000001", "step-00000002"]


def test_rm_of_the_artifact_removes_nothing_and_names_what_works(served_emulator: Emulator,
                                                                 o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-1/model.pt", b"m")
    with pytest.raises(o41.Immutable, match=r"fs\.rm\('o41://.*/step-100', recursive=True\)"):
        fs.rm(o41_location, recursive=True)
    assert names(fs, o41_location) == ["step-00000001"]


def test_rm_of_each_file_of_a_version_deletes_it_with_the_last(served_emulator: Emulator,
                                                               o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe({f"{o41_location}/step-1/model.pt": b"m", f"{o41_location}/step-1/optim.pt": b"o"})
    fs.pipe_file(f"{o41_location}/step-2/model.pt", b"m")
    fs.rm(f"{o41_location}/step-1/model.pt")
    assert names(fs, o41_location) == ["step-00000001", "step-00000002"]
    fs.rm([f"{o41_location}/step-1/optim.pt"])
    assert names(fs, o41_location) == ["step-00000002"]


def test_rm_by_a_process_that_only_read_is_refused_and_names_who_deletes(
        served_emulator: Emulator, o41_location: str) -> None:
    writer = make_fs(served_emulator)
    writer.pipe_file(f"{o41_location}/step-1/model.pt", b"m")
    writer.pipe_file(f"{o41_location}/step-2/model.pt", b"m")
    reader = make_fs(served_emulator)
    assert reader.cat_file(f"{o41_location}/step-1/model.pt") == b"m"
    with pytest.raises(PermissionError, match="holds none .* process that writes"):
        reader.rm(f"{o41_location}/step-1", recursive=True)
    assert names(writer, o41_location) == ["step-00000001", "step-00000002"]


def test_fenced_zombie_deletes_nothing(served_emulator: Emulator, o41_location: str) -> None:
    zombie = make_fs(served_emulator)
    zombie.pipe_file(f"{o41_location}/step-1/model.pt", b"m")
    zombie.commit_pending()
    relaunch = make_fs(served_emulator)
    relaunch.pipe_file(f"{o41_location}/step-2/model.pt", b"m")
    relaunch.commit_pending()
    with pytest.raises(o41.Fenced):
        zombie.rm(f"{o41_location}/step-1", recursive=True)
    assert names(relaunch, o41_location) == ["step-00000001", "step-00000002"]


def test_load_begun_before_the_delete_completes(served_emulator: Emulator,
                                                o41_location: str) -> None:
    writer = make_fs(served_emulator)
    payload = secrets.token_bytes(3 * 1024 * 1024)
    writer.pipe_file(f"{o41_location}/step-1/model.pt", payload)
    writer.pipe_file(f"{o41_location}/step-2/model.pt", b"m")
    reader = make_fs(served_emulator, block_size=1024 * 1024)
    with reader.open(f"{o41_location}/step-1/model.pt", "rb", block_size=1024 * 1024) as f:
        head = f.read(1024)  # the load has begun: its URLs are signed
        writer.rm(f"{o41_location}/step-1", recursive=True)
        assert names(writer, o41_location) == ["step-00000002"]
        assert head + f.read() == payload


def test_keep_the_last_k_loop_bounds_the_store(served_emulator: Emulator, o41_location: str
                                               ) -> None:
    """The loop as written for s3: save a step, then remove all but the newest k."""
    fs, keep, size = make_fs(served_emulator), 2, 1000
    peak = 0
    for step in range(1, 9):
        fs.pipe_file(f"{o41_location}/step-{step}/model.pt", bytes(size))
        for old in sorted(fs.ls(o41_location, detail=False))[:-keep]:
            fs.rm(old, recursive=True)
        peak = max(peak, stored_bytes(fs, o41_location))
    assert names(fs, o41_location) == ["step-00000007", "step-00000008"]
    assert peak <= keep * size and stored_bytes(fs, o41_location) == keep * size


# -- Lightning's top-k deletes ----------------------------------------------------------------

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
L = pytest.importorskip("lightning", reason="lightning is not installed (pip install -e '.[test]')")

from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


class Model(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        # Seeded: which steps are a top-k's best follows from the weights it starts from, and
        # torch's global generator is wherever the tests before this one in the process left it.
        self.layer = torch.nn.Linear(8, 1)
        with torch.no_grad():
            g = torch.Generator().manual_seed(0)
            self.layer.weight.copy_(torch.randn(self.layer.weight.shape, generator=g) * 0.1)
            self.layer.bias.zero_()

    def training_step(self, batch: tuple, _: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch: tuple, _: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def data(n: int = 32) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    return DataLoader(TensorDataset(torch.randn(n, 8, generator=g),
                                    torch.randn(n, 1, generator=g)), batch_size=8)


def fit(max_steps: int, **checkpoint: object) -> L.Trainer:
    cb = ModelCheckpoint(**checkpoint)
    trainer = L.Trainer(max_steps=max_steps, callbacks=[cb], logger=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=1, val_check_interval=4)
    trainer.fit(Model(), data(), data(16), ckpt_path="last")
    return trainer


def test_lightning_default_top_1_keeps_one_version_and_resumes(o41_env: Emulator,
                                                               o41_location: str) -> None:
    fs = fsspec.filesystem("o41")
    fit(12, dirpath=o41_location, every_n_train_steps=4, save_last=True)
    assert names(fs, o41_location) == ["step-00000012"]
    assert fit(20, dirpath=o41_location, every_n_train_steps=4,
               save_last=True).global_step == 20
    assert names(fs, o41_location) == ["step-00000020"]


def test_lightning_monitor_top_2_deletes_the_worse_versions(o41_env: Emulator,
                                                            o41_location: str) -> None:
    fs = fsspec.filesystem("o41")
    trainer = fit(24, dirpath=o41_location, every_n_train_steps=4, save_top_k=2,
                  monitor="val_loss", mode="min")
    kept = {p.rsplit("/", 1)[-1] for p in trainer.checkpoint_callback.best_k_models}
    listed = names(fs, o41_location)
    assert len(listed) <= 3  # the two best, and the latest if it is not one of them
    for name in kept:
        assert fs.exists(f"{o41_location}/{name}")
    assert listed[-1] == "step-00000024"
