"""What a trainer sees: the o41 client saving and loading a sharded checkpoint, end to end.

Three ways to move the same shards, each sha256-verified, measured in turns in one run:

- the ``o41`` client (``Run.save`` / ``Run.load``) against the emulator, client and server
  together, as a trainer uses them;
- the same through the fsspec filesystem (``fs.put`` / ``fs.get``, recursive);
- boto3 against moto's S3 server, 8 threads (hash then ``upload_file``; ``download_file``
  then hash);
- a verifying copy on the same disk: read, sha256, write, 8 threads. The local limit of a
  verified restore: whatever moves over HTTP also has to be received, hashed and written.
"""

from __future__ import annotations

import hashlib
import os
import resource
import secrets
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .servers import KEY, Emulator, Moto, tree

MB = 1e6
THREADS = 8
BLOCK = 4 << 20


@dataclass
class Rates:
    """Best-of MB/s (10^6 bytes) of each way, save and load, and the least CPU seconds it
    took (this process and the server's, summed): on shared cores the wall-clock figures
    move with the load from elsewhere, CPU seconds much less."""

    save: dict[str, list[float]] = field(default_factory=dict)
    load: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[tuple[str, str], float] = field(default_factory=dict)
    split: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    server: list[int] = field(default_factory=list)

    def cpu_text(self, what: str, way: str) -> str:
        """``client+server`` CPU seconds of the cheapest run of (what, way)."""
        mine, theirs = self.split.get((what, way), (0.0, 0.0))
        return f"{mine:.2f}+{theirs:.2f}"

    def add(self, what: str, way: str, nbytes: int, seconds: float) -> None:
        getattr(self, what).setdefault(way, []).append(nbytes / seconds / MB)

    def best(self, what: str, way: str) -> float:
        return max(getattr(self, what).get(way, []), default=0.0)

    def timed(self, what: str, way: str, nbytes: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` once, recording its MB/s and the CPU it and the server used."""
        os.sync()  # no dirty pages of the previous turn throttling this one
        mine0, theirs0 = _cpu_self(), sum(map(_cpu_tree, self.server))
        t0 = time.perf_counter()
        fn()
        seconds = time.perf_counter() - t0
        mine, theirs = _cpu_self() - mine0, sum(map(_cpu_tree, self.server)) - theirs0
        self.add(what, way, nbytes, seconds)
        key = (what, way)
        if mine + theirs < self.cpu.get(key, float("inf")):
            self.cpu[key] = mine + theirs
            self.split[key] = (mine, theirs)


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_tree(pid: int) -> float:
    """User + system seconds of ``pid`` and its descendants (gunicorn's workers)."""
    total = 0.0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def make_shards(root: Path, shards: int, size: int) -> dict[str, str]:
    """``shards`` files of random bytes; returns name -> sha256."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for i in range(shards):
        data = os.urandom(size)
        (root / f"shard-{i:02d}.bin").write_bytes(data)
        out[f"shard-{i:02d}.bin"] = hashlib.sha256(data).hexdigest()
    return out


def _each(names: list[str], fn: Callable[[str], None]) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(fn, names))


def verifying_copy(src: Path, dst: Path, sums: dict[str, str]) -> None:
    """Read, sha256 and write every shard, 8 threads; a mismatch is an error."""
    dst.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> None:
        digest = hashlib.sha256()
        buf = memoryview(bytearray(BLOCK))
        with open(src / name, "rb", buffering=0) as fin, open(dst / name, "wb") as fout:
            while n := fin.readinto(buf):
                digest.update(buf[:n])
                fout.write(buf[:n])
        if digest.hexdigest() != sums[name]:
            raise RuntimeError(f"copy of {name}: sha256 differs")

    _each(list(sums), one)


def _sha(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def boto3_moto(moto: Moto, src: Path, dst: Path, sums: dict[str, str], prefix: str,
               rates: Rates, total: int) -> None:
    """Save (hash, upload_file) and load (download_file, hash), 8 threads, one client."""
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench",
                      config=Config(signature_version="s3v4", max_pool_connections=THREADS))
    one_thread = TransferConfig(use_threads=False)
    if not s3.list_buckets().get("Buckets"):
        s3.create_bucket(Bucket="bench")
    dst.mkdir(parents=True, exist_ok=True)

    def save(name: str) -> None:
        sha = _sha(src / name)
        s3.upload_file(str(src / name), "bench", f"{prefix}/{name}", Config=one_thread,
                       ExtraArgs={"Metadata": {"sha256": sha}})

    def load(name: str) -> None:
        s3.download_file("bench", f"{prefix}/{name}", str(dst / name), Config=one_thread)
        if _sha(dst / name) != sums[name]:
            raise RuntimeError(f"boto3 load of {name}: sha256 differs")

    rates.server = [moto.pid]
    rates.timed("save", "boto3", total, lambda: _each(list(sums), save))
    rates.timed("load", "boto3", total, lambda: _each(list(sums), load))
    for name in sums:
        s3.delete_object(Bucket="bench", Key=f"{prefix}/{name}")


def o41_client(emu: Emulator, src: Path, dst: Path, step: int, rates: Rates,
               total: int) -> None:
    """``Run.save`` then, from a second open, ``Run.load`` of the same step."""
    import o41

    settings = o41.Settings(emu.api, KEY, o41.Place("aws", "us-east-1"), "bench:1")
    location = "o41://bench/restore"
    rates.server = [emu.pid]
    run = o41.open(location, resume="latest", settings=settings)
    rates.timed("save", "client", total, lambda: run.save(step, src))
    run = o41.open(location, resume="latest", settings=settings)
    rates.timed("load", "client", total, lambda: run.load(dst))


def o41_fsspec(emu: Emulator, src: Path, dst: Path, step: int, rates: Rates,
               total: int) -> None:
    """The same through ``fsspec``: ``put`` of the directory as one version, ``get`` back."""
    import fsspec

    options = {"api_url": emu.api, "api_key": KEY, "place": "aws/us-east-1",
               "skip_instance_cache": True}
    rates.server = [emu.pid]
    fs = fsspec.filesystem("o41", **options)
    target = f"o41://bench/restore-fs/step-{step:08d}"
    rates.timed("save", "fsspec", total,
                lambda: fs.put(f"{src}/", target + "/", recursive=True))
    fs = fsspec.filesystem("o41", **options)
    rates.timed("load", "fsspec", total,
                lambda: fs.get(target + "/", f"{dst}/", recursive=True))


def measure(work: Path, shards: int, size: int, rounds: int, log) -> Rates:
    """Every way, ``rounds`` turns each, interleaved so load from elsewhere hits all alike."""
    src = work / "shards"
    sums = make_shards(src, shards, size)
    total = shards * size
    rates = Rates()
    emu = Emulator(work / "data-restore", work, name="emulator-restore")
    moto = Moto(work)
    try:
        for turn in range(1, rounds + 1):
            log(f"restore turn {turn}: verifying copy, client, fsspec, boto3+moto")
            dst = work / f"out-{secrets.token_hex(3)}"
            rates.server = []
            rates.timed("load", "copy", total, lambda d=dst: verifying_copy(src, d / "copy", sums))
            rates.save["copy"] = rates.load["copy"]
            rates.cpu[("save", "copy")] = rates.cpu[("load", "copy")]  # one copy, both rows
            rates.split[("save", "copy")] = rates.split[("load", "copy")]
            o41_client(emu, src, dst / "client", 2 * turn, rates, total)
            o41_fsspec(emu, src, dst / "fsspec", 2 * turn, rates, total)
            boto3_moto(moto, src, dst / "boto3", sums, f"t{turn}", rates, total)
            for way in ("client", "fsspec"):
                for name, sha in sums.items():
                    if _sha(dst / way / name) != sha:
                        raise RuntimeError(f"{way} load of {name}: sha256 differs")
            shutil.rmtree(dst)
    finally:
        emu.stop()
        moto.stop()
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(work / "data-restore", ignore_errors=True)
    return rates
