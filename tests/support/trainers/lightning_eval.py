"""An evaluation job: validates the latest checkpoint of a Lightning run, reading only.

``python lightning_eval.py LOCATION``: ``trainer.validate(model, ckpt_path="last")`` with a
``ModelCheckpoint(dirpath=LOCATION)`` callback, as an eval job written for s3:// would.
Prints ``validated step <global step of the checkpoint>``.
"""

from __future__ import annotations

import sys

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from lightning_fit import Tiny  # noqa: E402


class Evaluated(Tiny):
    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))


def main() -> None:
    location = sys.argv[1]
    data = TensorDataset(torch.randn(16, 8), torch.randn(16, 1))
    trainer = L.Trainer(callbacks=[ModelCheckpoint(dirpath=location)], logger=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=1)
    trainer.validate(Evaluated(0.0), DataLoader(data, batch_size=8), ckpt_path="last")
    print(f"validated step {trainer.global_step}", flush=True)


if __name__ == "__main__":
    main()
