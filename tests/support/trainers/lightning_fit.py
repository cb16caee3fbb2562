"""A Lightning trainer written as for s3://: only its checkpoint location is o41://.

``python lightning_fit.py LOCATION --steps N --every K [--sleep S] [--top-k T] [--monitor]
[--async-io]``: fits a tiny model on random CPU data for ``N`` global steps, checkpointing
every ``K`` with Lightning's default file names and ``save_last=True`` (on a saving thread
with ``--async-io``; the top ``T`` by training loss with ``--monitor``), and resumes with
``ckpt_path="last"``. LOCATION may be a local folder (the same fit on local disk). It prints
``resumed-at <global step>`` once fitting starts and ``step <n>`` after each training step,
so a test can follow it; ``--sleep`` slows each step.
"""

from __future__ import annotations

import argparse
import sys
import time

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.plugins.io import AsyncCheckpointIO
from torch.utils.data import DataLoader, TensorDataset


class Tiny(L.LightningModule):
    def __init__(self, sleep: float, monitor: bool = False) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
        self.sleep, self.monitor = sleep, monitor

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        if self.sleep:
            time.sleep(self.sleep)
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        if self.monitor:  # the same value on every rank, so the ranks agree on the top k
            self.log("train_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class Report(Callback):
    def on_train_start(self, trainer: L.Trainer, _: L.LightningModule) -> None:
        print(f"resumed-at {trainer.global_step}", flush=True)

    def on_train_batch_end(self, trainer: L.Trainer, *_: object) -> None:
        print(f"step {trainer.global_step}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--top-k", type=int, default=1)
    parser.add_argument("--monitor", action="store_true",
                        help='ModelCheckpoint(monitor="train_loss"): the top k by loss')
    parser.add_argument("--ckpt-path", default="last", help='"last", or "none" for a fresh fit')
    parser.add_argument("--async-io", action="store_true",
                        help="Trainer(plugins=[AsyncCheckpointIO()]): saves on a thread")
    parser.add_argument("--devices", type=int, default=1,
                        help="CPU processes (DDP, strategy='ddp', when more than 1)")
    parser.add_argument("--root-dir", action="store_true",
                        help="Trainer(default_root_dir=LOCATION) and no dirpath")
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    checkpoints = ModelCheckpoint(dirpath=None if args.root_dir else args.location,
                                  every_n_train_steps=args.every, save_last=True,
                                  save_top_k=args.top_k,
                                  monitor="train_loss" if args.monitor else None)
    where = {"default_root_dir": args.location} if args.root_dir else {"logger": False}
    if args.async_io:
        where["plugins"] = [AsyncCheckpointIO()]
    trainer = L.Trainer(max_steps=args.steps, callbacks=[checkpoints, Report()],
                        enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=args.devices,
                        **({"strategy": "ddp"} if args.devices > 1 else {}), **where)
    trainer.fit(Tiny(args.sleep, args.monitor), DataLoader(data, batch_size=8),
                ckpt_path=None if args.ckpt_path == "none" else args.ckpt_path)
    print(f"done {trainer.global_step}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
