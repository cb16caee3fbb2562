"""A multi-rank DCP trainer that saves with ``dcp.async_save`` and the process-based
checkpointer (torchrun, gloo on CPU, FSDP2), written as for s3://: each rank hands its
staged state to DCP's checkpoint process, which opens, writes and commits.

``torchrun --nproc_per_node=N dcp_async_ranks.py LOCATION --steps S --every K`` shards a
linear layer over the ranks with ``fully_shard``, resumes from ``LOCATION/latest`` when the
artifact has checkpoints (checking every element is what was saved), then trains (adds 1
per step) and saves ``LOCATION/step-XXXXXXXX`` every ``K`` steps, waiting for each save
before the next. It prints ``rank R pid P``, ``rank R resumed-at S`` and ``rank R saved S``.
``--hold-after S`` (repeatable): every rank waits for SIGCONT after saving step S (a zombie
test SIGSTOPs the job there, relaunches, then wakes it). ``--hold-before-save``: every rank prints
``rank R waiting`` after it resumed and waits for SIGCONT before its first save.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

import fsspec
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

WIDTH = 64


def say(line: str) -> None:
    """One line in one write: the ranks share torchrun's stdout, and lines never mix."""
    sys.stdout.flush()
    os.write(1, f"{line}\n".encode())


def hold(woken: threading.Event) -> None:
    """Until SIGCONT: a handler runs in the main thread only, while another thread (gloo's)
    may take the signal, so pause() could sleep through it."""
    while not woken.wait(0.1):
        pass
    woken.clear()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--hold-after", type=int, action="append", default=[])
    parser.add_argument("--hold-before-save", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    say(f"rank {rank} pid {os.getpid()}")
    mesh = init_device_mesh("cpu", (world,))
    model = torch.nn.Linear(WIDTH, WIDTH)
    base = torch.arange(WIDTH * WIDTH, dtype=torch.float32).reshape(WIDTH, WIDTH)
    with torch.no_grad():
        model.weight.copy_(base)
        model.bias.zero_()
    fully_shard(model, mesh=mesh)
    state = {"model": model, "step": torch.tensor(0)}
    fs, root = fsspec.core.url_to_fs(args.location)
    found = [fs.exists(f"{root}/latest/.metadata") if rank == 0 else None]
    dist.broadcast_object_list(found)
    if found[0]:
        dcp.load(state, checkpoint_id=f"{args.location}/latest")
    step = int(state["step"])
    weight = model.weight.full_tensor()
    assert torch.equal(weight, base + step), f"rank {rank}: the weight is not step {step}'s"
    assert torch.equal(model.bias.full_tensor(), torch.full((WIDTH,), float(step)))
    say(f"rank {rank} resumed-at {step}")
    woken = threading.Event()
    signal.signal(signal.SIGCONT, lambda *_: woken.set())
    if args.hold_before_save:
        say(f"rank {rank} waiting")
        hold(woken)
    while step < args.steps:
        step += 1
        with torch.no_grad():
            for param in model.parameters():
                param.add_(1)
        if step % args.every:
            continue
        future = dcp.async_save({"model": model, "step": torch.tensor(step)},
                                checkpoint_id=f"{args.location}/step-{step:08d}",
                                async_checkpointer_type=AsyncCheckpointerType.PROCESS)
        future.result()
        say(f"rank {rank} saved {step}")
        if step in args.hold_after:
            say(f"rank {rank} holding")
            hold(woken)
    dist.destroy_process_group()
    say(f"rank {rank} done {step}")


if __name__ == "__main__":
    main()
