"""Commits DCP checkpoints whose every tensor holds its step, for readers racing commits.

``python dcp_writer.py LOCATION --saves N``: ``dcp.save`` of ``{"a", "b", "c", "step"}``,
all filled with the step, at steps 1..N, over four writer threads (so each version has
several shard files). A load that mixes versions sees two different values.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter


def state(step: int) -> dict[str, torch.Tensor]:
    return {name: torch.full((64, 256), float(step)) for name in "abc"} | {
        "step": torch.tensor(step)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--saves", type=int, default=20)
    args = parser.parse_args()
    for step in range(1, args.saves + 1):
        dcp.save(state(step), storage_writer=FsspecWriter(
            f"{args.location}/step-{step:08d}", thread_count=4))
        print(f"saved {step}", flush=True)


if __name__ == "__main__":
    main()
