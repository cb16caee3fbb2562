"""A torch.distributed.checkpoint trainer written as for s3://: only the location is o41://.

``python dcp_train.py LOCATION --steps N --every K [--sleep S] [--threads T]``: resumes
from ``LOCATION/latest`` when the artifact has checkpoints (found with plain fsspec), then
trains, saving ``LOCATION/step-XXXXXXXX`` with ``dcp.save`` every ``K`` steps. Prints
``resumed-at <step>`` and ``step <n>`` lines for a test to follow.
"""

from __future__ import annotations

import argparse
import time

import fsspec
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    model = torch.nn.Linear(64, 64)
    optim = torch.optim.SGD(model.parameters(), lr=0.01)
    state = {"model": model.state_dict(), "optim": optim.state_dict(),
             "step": torch.tensor(0)}
    fs, root = fsspec.core.url_to_fs(args.location)
    if fs.exists(root) and fs.ls(root):
        dcp.load(state, checkpoint_id=f"{args.location}/latest")
        model.load_state_dict(state["model"])
    step = int(state["step"])
    print(f"resumed-at {step}", flush=True)
    while step < args.steps:
        if args.sleep:
            time.sleep(args.sleep)
        loss = model(torch.randn(4, 64)).pow(2).mean()
        loss.backward()
        optim.step()
        optim.zero_grad()
        step += 1
        print(f"step {step}", flush=True)
        if step % args.every == 0:
            state = {"model": model.state_dict(), "optim": optim.state_dict(),
                     "step": torch.tensor(step)}
            path = f"{args.location}/step-{step:08d}"
            dcp.save(state, storage_writer=FsspecWriter(path, thread_count=args.threads))
    print(f"done {step}", flush=True)


if __name__ == "__main__":
    main()
