"""A 2-rank torch.distributed.checkpoint save and load through ``o41://`` beside DCP's local
writer and reader: ``python -m bench.dcp_ranks [--ranks 2] [--mib 256] [--rounds 3]``.

torchrun (gloo, CPU) runs ``--ranks`` processes holding a state of 8 MiB tensors sharded
over them (DTensor), ``--mib`` in all; each turn saves and loads it with
``FileSystemWriter``/``FileSystemReader`` on a local directory, then with
``checkpoint_id="o41://…"`` (DCP picks its fsspec writer and reader; ``o41.adapters.dcp``
makes the job's shards one version). Times are rank 0's, between barriers; best of the turns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

TENSOR = 8 << 20
WORKER = "BENCH_DCP_RANKS_WORKER"  # torchrun's own options would take a rank's flags


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    count = max(1, (args.mib << 20) // TENSOR)
    n = TENSOR // 4
    state = {f"t{i}": distribute_tensor(torch.rand(n * world), mesh, [Shard(0)])
             for i in range(count)}
    best: dict[str, float] = {}

    def timed(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        dist.barrier()
        start = time.perf_counter()
        fn()
        dist.barrier()
        took = time.perf_counter() - start
        best[name] = min(best.get(name, took), took)

    for turn in range(args.rounds):
        local = Path(args.local) / f"turn-{turn}"
        timed("local save", lambda p=local: dcp.save(state, storage_writer=FileSystemWriter(p)))
        back = {k: distribute_tensor(torch.zeros(n * world), mesh, [Shard(0)]) for k in state}
        timed("local load", lambda p=local, b=back: dcp.load(b, storage_reader=FileSystemReader(p)))
        step = f"{args.location}/step-{turn + 1:08d}"
        timed("o41 save", lambda s=step: dcp.save(state, checkpoint_id=s))
        back = {k: distribute_tensor(torch.zeros(n * world), mesh, [Shard(0)]) for k in state}
        timed("o41 load", lambda b=back: dcp.load(b, checkpoint_id=f"{args.location}/latest"))
        assert all(torch.equal(back[k].to_local(), state[k].to_local()) for k in state)
    if rank == 0:
        total = count * TENSOR * world
        print("RESULT " + json.dumps({k: total / v / 1e6 for k, v in best.items()}), flush=True)
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--mib", type=int, default=256, help="MiB of state over all ranks")
    ap.add_argument("--rounds", type=int, default=3)
    if os.environ.get(WORKER):  # a rank, started by torchrun: its settings in WORKER
        worker(argparse.Namespace(**json.loads(os.environ[WORKER])))
        return
    args = ap.parse_args()
    rates = measure(args.ranks, args.mib, args.rounds, print)
    print(f"{args.ranks}-rank DCP, {args.mib} MiB, best of {args.rounds} "
          f"(load average {os.getloadavg()[0]:.1f} after)")
    for op in ("save", "load"):
        o41, local = rates[f"o41 {op}"], rates[f"local {op}"]
        print(f"  {op}: o41:// {o41:.0f} MB/s, local {local:.0f} MB/s, {o41 / local:.2f}x")


def measure(ranks: int, mib: int, rounds: int, log: Callable[[str], object]
            ) -> dict[str, float]:
    """Rank 0's best MB/s of ``local save``, ``local load``, ``o41 save``, ``o41 load``."""
    from .servers import KEY, Emulator

    log(f"DCP with {ranks} ranks, {mib} MiB, {rounds} turns")
    work = Path(tempfile.mkdtemp(prefix="bench-dcp-ranks-", dir="/dev/shm"
                                 if os.path.isdir("/dev/shm") else None))
    emu = Emulator(work / "data", work, name="emulator-dcp-ranks")
    try:
        settings = {"mib": mib, "rounds": rounds, "local": str(work / "local"),
                    "location": f"o41://bench/dcp-ranks-{os.getpid()}"}
        env = {**os.environ, "O41_ARTIFACTS_API_URL": emu.api, "O41_ARTIFACTS_API_KEY": KEY,
               "O41_PLACE": "aws/us-east-1", "OMP_NUM_THREADS": "1",
               WORKER: json.dumps(settings)}
        torchrun = str(Path(sys.executable).with_name("torchrun"))
        done = subprocess.run(
            [torchrun, "--standalone", f"--nproc_per_node={ranks}", "-m",
             "bench.dcp_ranks"], env=env, capture_output=True, text=True, timeout=1800,
            cwd=Path(__file__).resolve().parent.parent)
        rates = next((json.loads(ln[7:]) for ln in done.stdout.splitlines()
                      if ln.startswith("RESULT ")), None)
        if rates is None:
            raise RuntimeError(f"the job failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return rates
    finally:
        emu.stop()
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
