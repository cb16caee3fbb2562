"""Lightning is taught o41's layout whichever comes first: ``import lightning`` or the first
``o41://`` filesystem instance (fsspec's instance cache included)."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.support.trainer_runs import REPO, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
pytest.importorskip("lightning")

FIT = """
import torch
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

def fit(steps):
    cb = ModelCheckpoint(dirpath=LOCATION, every_n_train_steps=2, save_last=True)
    trainer = L.Trainer(max_steps=steps, callbacks=[cb], logger=False, accelerator="cpu",
                        enable_progress_bar=False, enable_model_summary=False)
    data = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
    trainer.fit(Model(), data, ckpt_path="last")
    return trainer.global_step

assert fit(2) == 2
assert fit(4) == 4
"""


@pytest.mark.parametrize("first", ["o41 instance", "import lightning"])
def test_fit_resumes_from_last_in_either_import_order(served_emulator: Emulator,
                                                      o41_location: str, first: str) -> None:
    head = (f"import fsspec\nLOCATION = {o41_location!r}\n"
            "fsspec.filesystem('o41')  # cached: the fit's own lookup gets this instance\n")
    if first == "import lightning":
        head = "import lightning\n" + head
    done = subprocess.run([sys.executable, "-c", head + FIT], cwd=REPO, timeout=300,
                          env=served_emulator.client_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [v["step"] for v in versions(served_emulator.api, served_emulator.key, o41_location)] \
        == [4]  # save_top_k=1 deleted step 2 once step 4 was committed (VER-7)


def test_lightning_that_cannot_be_mended_fails_its_fit_with_one_line(
        served_emulator: Emulator, o41_location: str) -> None:
    head = (f"LOCATION = {o41_location!r}\n"
            "from lightning.pytorch.trainer.connectors import checkpoint_connector as c\n"
            "del c._CheckpointConnector._select_ckpt_path  # as a newer Lightning might\n")
    done = subprocess.run([sys.executable, "-c", head + FIT], cwd=REPO, timeout=300,
                          env=served_emulator.client_env(), capture_output=True, text=True)
    assert done.returncode != 0
    assert "o41: cannot teach lightning.pytorch" in done.stderr
    assert versions(served_emulator.api, served_emulator.key, o41_location) == []
