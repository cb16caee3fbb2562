"""torchtitan 0.3.0's own ``CheckpointManager`` (gloo, CPU), unchanged: only the folder is o41://.

``python torchtitan_train.py FOLDER --steps N --every K --keep K2``: one rank in a gloo
process group; torchtitan's ``CheckpointManager`` loads the last step it finds in FOLDER
(``step-{n}`` folders, no zero padding), then trains and saves ``FOLDER/step-{n}`` every
``K`` steps, purging all but the newest ``K2`` (``keep_latest_k``) on its purge thread.
Prints ``resumed-at <step>``, ``step <n>`` and ``saved <n>`` lines for a test to follow,
and ``done <step> <checksum>`` at the end (the checksum of the model's weights).
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.stateful import Stateful
from torchtitan.components.checkpoint import CheckpointManager
from torchtitan.components.optimizer.lr_scheduler import LRSchedulersContainer
from torchtitan.components.optimizer.optimizer import OptimizersContainer, ParamGroupConfig


class Counter(Stateful):
    """The train state and the data position: what torchtitan's trainer keeps besides."""

    def __init__(self) -> None:
        self.step = 0

    def state_dict(self) -> dict:
        return {"step": torch.tensor(self.step)}

    def load_state_dict(self, state: dict) -> None:
        self.step = int(state["step"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--keep", type=int, default=2)
    args = parser.parse_args()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    optimizers = OptimizersContainer(
        OptimizersContainer.Config(
            param_groups=[ParamGroupConfig(pattern=".*", optimizer_name="AdamW",
                                           optimizer_kwargs={"lr": 1e-2})],
            implementation="for-loop"),
        model_parts=[model])
    schedulers = LRSchedulersContainer(optimizers, lambda _: 1.0)
    train_state, data_state = Counter(), Counter()
    config = CheckpointManager.Config(enable=True, folder=args.folder, interval=args.every,
                                      keep_latest_k=args.keep, last_save_model_only=False)
    checkpointer = CheckpointManager(config, dataloader=data_state, model_parts=[model],
                                     optimizers=optimizers, lr_schedulers=schedulers,
                                     states={"train_state": train_state}, sd_adapter=None)
    checkpointer.load(step=-1)
    print(f"resumed-at {train_state.step}", flush=True)
    while train_state.step < args.steps:
        # the batch of this step, as a resumed loader gives it: a relaunch trains the same
        batch = torch.randn(8, 16, generator=torch.Generator().manual_seed(train_state.step))
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizers.step()
        optimizers.zero_grad()
        schedulers.step()
        train_state.step += 1
        data_state.step = train_state.step
        print(f"step {train_state.step}", flush=True)
        if checkpointer.save(train_state.step, last_step=train_state.step == args.steps):
            print(f"saved {train_state.step}", flush=True)
    checkpointer.close()  # the purge thread finishes its deletes first
    with torch.no_grad():
        weights = sum(float(p.double().sum()) for p in model.parameters())
    print(f"done {train_state.step} {weights:.10f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
