"""torch.distributed.checkpoint (DCP) through ``o41://`` beside DCP on a local directory.

The same state dict is saved and loaded, in turns, by DCP's own ``FileSystemWriter`` /
``FileSystemReader`` on the run's directory and by DCP's ``FsspecWriter`` / ``FsspecReader``
on ``o41://`` (picked by DCP itself from ``checkpoint_id``), once with one writer thread
and once with four. The ``o41://`` figures are client and emulator together, on the same
cores, as a trainer sees them: staging, hashing, PUTs, commit; signed reads, GETs, checks.
The bytes a load read are the emulator's usage meter (``GET /usage/read``) for the
artifact, against the sum of the checkpoint's file sizes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .restore import _cpu_self, _cpu_tree
from .servers import KEY, Emulator

MB = 1e6
TENSOR_BYTES = 8 << 20  # a state of tensors of 8 MiB, like a sharded model's parameters


@dataclass
class DcpRates:
    """Best-of MB/s of each (op, way), and bytes read per load over checkpoint bytes."""

    rates: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    read_ratios: list[float] = field(default_factory=list)
    cpu: dict[tuple[str, str], float] = field(default_factory=dict)
    split: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    server: list[int] = field(default_factory=list)

    def best(self, op: str, way: str) -> float:
        return max(self.rates.get((op, way), []), default=0.0)

    def timed(self, op: str, way: str, nbytes: int, fn: Callable[[], Any]) -> None:
        """Run ``fn`` once: its MB/s, and the least CPU seconds it and the emulator took
        (on shared cores the wall clock moves with the load from elsewhere, CPU much less)."""
        mine0, theirs0 = _cpu_self(), sum(map(_cpu_tree, self.server))
        t0 = time.perf_counter()
        fn()
        self.rates.setdefault((op, way), []).append(nbytes / (time.perf_counter() - t0) / MB)
        mine, theirs = _cpu_self() - mine0, sum(map(_cpu_tree, self.server)) - theirs0
        if mine + theirs < self.cpu.get((op, way), float("inf")):
            self.cpu[(op, way)] = mine + theirs
            self.split[(op, way)] = (mine, theirs)

    def cpu_text(self, op: str, way: str) -> str:
        """``client+emulator`` CPU seconds of the cheapest run of (op, way)."""
        mine, theirs = self.split.get((op, way), (0.0, 0.0))
        return f"{mine:.2f}+{theirs:.2f}"


def available() -> bool:
    """DCP needs torch, which this project does not depend on (a 1 GB install)."""
    try:
        import torch.distributed.checkpoint  # noqa: F401
    except ImportError:
        return False
    return True


def make_state(total: int) -> dict[str, Any]:
    import torch

    count = max(1, total // TENSOR_BYTES)
    per = total // count // 4
    gen = torch.Generator().manual_seed(41)
    return {f"layer{i:03d}.weight": torch.rand(per, generator=gen) for i in range(count)}


def _zeros_like(state: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {k: torch.zeros_like(v) for k, v in state.items()}


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    import torch

    for k, v in a.items():
        if not torch.equal(v, b[k]):
            raise RuntimeError(f"DCP load of {k}: tensor differs from the saved one")


def _read_bytes(emu: Emulator, artifact: str) -> int:
    usage = emu.call("GET", "usage/read", params={"artifact": artifact})
    return sum(int(r.get("read_bytes") or 0) for r in usage["routes"].values())


def _checkpoint_bytes(emu: Emulator, artifact: str) -> int:
    version = emu.call("GET", "versions/read", params={"artifact": artifact,
                                                         "version": "latest"})
    return sum(int(f["size"]) for f in version["files"])


def measure(work: Path, total: int, rounds: int, log) -> DcpRates:
    """Local, o41 with 1 writer thread and o41 with 4, ``rounds`` interleaved turns each."""
    import fsspec
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

    warnings.filterwarnings("ignore", message=".*process group.*")  # one process, no group
    warnings.filterwarnings("ignore", category=UserWarning, module="torch.distributed")
    state = make_state(total)
    nbytes = sum(v.numel() * v.element_size() for v in state.values())
    out = DcpRates()
    emu = Emulator(work / "data-dcp", work, name="emulator-dcp")
    out.server = [emu.pid]  # counted for the local ways too: it idles then
    saved_env = {k: os.environ.get(k) for k in ("O41_ARTIFACTS_API_URL",
                                                "O41_ARTIFACTS_API_KEY", "O41_PLACE")}
    os.environ.update(O41_ARTIFACTS_API_URL=emu.api, O41_ARTIFACTS_API_KEY=KEY,
                      O41_PLACE="aws/us-east-1")
    try:
        for turn in range(1, rounds + 1):
            log(f"DCP turn {turn}: local, o41:// 1 thread, o41:// 4 threads")
            local = work / f"dcp-local-{secrets.token_hex(3)}"
            for threads in (1, 4):
                way = f"local-{threads}"
                out.timed("save", way, nbytes, lambda p=local / way, t=threads: dcp.save(
                    state, storage_writer=FileSystemWriter(p, thread_count=t)))
                back = _zeros_like(state)
                out.timed("load", way, nbytes, lambda p=local / way, b=back: dcp.load(
                    b, storage_reader=FileSystemReader(p)))
                _same(state, back)
            shutil.rmtree(local)
            for threads in (1, 4):
                fsspec.get_filesystem_class("o41").clear_instance_cache()
                artifact = f"bench/dcp-{secrets.token_hex(4)}"
                step = f"o41://{artifact}/step-00000001"
                if threads == 1:  # DCP picks FsspecWriter/Reader from the URL by itself
                    out.timed("save", "o41-1", nbytes,
                              lambda s=step: dcp.save(state, checkpoint_id=s))
                else:
                    out.timed("save", f"o41-{threads}", nbytes, lambda s=step, t=threads:
                              dcp.save(state, storage_writer=FsspecWriter(s, thread_count=t)))
                fsspec.get_filesystem_class("o41").clear_instance_cache()
                back = _zeros_like(state)
                before = _read_bytes(emu, artifact)
                out.timed("load", f"o41-{threads}", nbytes, lambda a=artifact, b=back:
                          dcp.load(b, checkpoint_id=f"o41://{a}/latest"))
                _same(state, back)
                out.read_ratios.append((_read_bytes(emu, artifact) - before)
                                       / _checkpoint_bytes(emu, artifact))
    finally:
        emu.stop()  # first: nothing below may leave the server running
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        fsspec.get_filesystem_class("o41").clear_instance_cache()
        shutil.rmtree(work / "data-dcp", ignore_errors=True)
    return out
