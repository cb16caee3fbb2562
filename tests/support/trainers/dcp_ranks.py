"""A multi-rank torch.distributed.checkpoint trainer (run by torchrun, gloo on CPU), written
as for s3://: only the location string is o41://.

``torchrun --nproc_per_node=N dcp_ranks.py LOCATION --steps S --every K`` holds two tensors
sharded over the ranks (DTensor), resumes from ``LOCATION/latest`` when the artifact has
checkpoints, checks that every element loaded is what was saved, then trains (adds 1 per
step) and saves ``LOCATION/step-XXXXXXXX`` with ``dcp.save`` every ``K`` steps. It prints
``rank R pid P``, ``rank R resumed-at S`` and ``rank R saved S`` lines for a test to follow.

``--hang-rank R --hang-at S``: rank R stops in the middle of its save of step S (after its
first tensor went into its shard) and waits for a signal: the test kills it there.
``--hold-after S``: every rank waits for SIGCONT after saving step S (a zombie test
SIGSTOPs the job there, relaunches, then wakes it).
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
from torch.distributed.checkpoint.default_planner import DefaultSavePlanner
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor


def say(line: str) -> None:
    """One line in one write: the ranks share torchrun's stdout, and lines never mix."""
    sys.stdout.flush()
    os.write(1, f"{line}\n".encode())


class HangingPlanner(DefaultSavePlanner):
    """Stops this rank once its first item of the save is resolved (written next)."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.rank, self.resolved = rank, 0

    def resolve_data(self, write_item):  # type: ignore[no-untyped-def]
        self.resolved += 1
        if self.resolved == 2:
            say(f"rank {self.rank} mid-save")
            signal.pause()
        return super().resolve_data(write_item)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--size", type=int, default=1 << 16, help="elements per rank")
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-at", type=int, default=-1)
    parser.add_argument("--hold-after", type=int, default=-1)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    say(f"rank {rank} pid {os.getpid()}")
    mesh = init_device_mesh("cpu", (world,))
    n = args.size * world
    base = torch.arange(n, dtype=torch.float32)
    w = distribute_tensor(base.clone(), mesh, [Shard(0)])
    v = distribute_tensor(-base.clone(), mesh, [Shard(0)])
    state = {"w": w, "v": v, "step": torch.tensor(0)}
    fs, root = fsspec.core.url_to_fs(args.location)
    found = [fs.exists(f"{root}/latest/.metadata") if rank == 0 else None]
    dist.broadcast_object_list(found)
    if found[0]:
        dcp.load(state, checkpoint_id=f"{args.location}/latest")
    step = int(state["step"])
    lo = rank * args.size
    want = base[lo:lo + args.size] + step
    assert torch.equal(state["w"].to_local(), want), f"rank {rank}: w is not step {step}'s"
    assert torch.equal(state["v"].to_local(), -base[lo:lo + args.size] - step)
    say(f"rank {rank} resumed-at {step}")
    woken = threading.Event()
    if args.hold_after >= 0:
        signal.signal(signal.SIGCONT, lambda *_: woken.set())
    while step < args.steps:
        step += 1
        state["w"] = state["w"] + 1
        state["v"] = state["v"] - 1
        state["step"] = torch.tensor(step)
        if step % args.every:
            continue
        hang = rank == args.hang_rank and step == args.hang_at
        dcp.save(state, checkpoint_id=f"{args.location}/step-{step:08d}",
                 planner=HangingPlanner(rank) if hang else None)
        say(f"rank {rank} saved {step}")
        if step == args.hold_after:
            say(f"rank {rank} holding")
            # Python runs a handler in the main thread only, while another thread of the
            # process (gloo's) may take the signal: pause() would sleep through it
            while not woken.wait(0.1):
                pass
    dist.destroy_process_group()
    say(f"rank {rank} done {step}")


if __name__ == "__main__":
    main()
