"""A multi-rank evaluation job (torchrun, gloo on CPU): loads ``LOCATION/latest`` again and
again while a trainer commits, and counts loads that mixed two versions.

``torchrun --nproc_per_node=N dcp_rank_loads.py LOCATION --loads L --size S`` holds the
tensors ``dcp_ranks.py`` saves (sharded the same way). A load is mixed when a rank's shard
is not all of one step, or when the ranks loaded different steps. Rank 0 prints
``loads L mixed M steps K`` (K: how many different steps were seen).
"""

from __future__ import annotations

import argparse
import os

import fsspec
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--loads", type=int, default=100)
    parser.add_argument("--size", type=int, default=1 << 16)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    base = torch.arange(args.size * world, dtype=torch.float32)
    lo = rank * args.size
    fs, _ = fsspec.core.url_to_fs(args.location)
    mixed, seen = 0, set()
    for _ in range(args.loads):
        state = {"w": distribute_tensor(torch.zeros_like(base), mesh, [Shard(0)]),
                 "v": distribute_tensor(torch.zeros_like(base), mesh, [Shard(0)]),
                 "step": torch.tensor(-1)}
        dcp.load(state, checkpoint_id=f"{args.location}/latest")
        step = int(state["step"])
        ok = (torch.equal(state["w"].to_local(), base[lo:lo + args.size] + step)
              and torch.equal(state["v"].to_local(), -base[lo:lo + args.size] - step))
        steps: list[object] = [None] * world
        dist.all_gather_object(steps, (step, ok))
        if len({s for s, _ in steps}) != 1 or not all(k for _, k in steps):
            mixed += 1
        seen.add(step)
    if rank == 0:
        os.write(1, f"loads {args.loads} mixed {mixed} steps {len(seen)}\n".encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
