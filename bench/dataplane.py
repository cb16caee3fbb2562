"""Data plane: one big checkpoint up through its signed PUT URL and back as 8 ranged GETs.

The same client code moves the same file through the emulator, through moto's S3 server
(presigned URLs, the tool a user would otherwise pick) and over raw loopback sockets (the
physical limit). Peak RSS of each server is taken from the kernel's high-water marks.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .client import parallel, put_file, ranged_read
from .loopback import read_range
from .servers import PLACE, Emulator, Moto, PeakRss, Process

MB = 1e6


@dataclass
class Transfer:
    """Best-of throughputs (MB/s, 10^6 bytes) and the server's peak RSS (MB, 2^20 bytes)."""

    upload: list[float] = field(default_factory=list)
    read: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    peak_pss_mb: float = 0.0
    idle_rss_mb: float = 0.0

    @property
    def best_upload(self) -> float:
        return max(self.upload, default=0.0)

    @property
    def best_read(self) -> float:
        return max(self.read, default=0.0)


def make_file(path: Path, size: int) -> str:
    """Write `size` random bytes (every MiB distinct) and return their sha256."""
    sha = hashlib.sha256()
    block = os.urandom(1 << 20)
    with open(path, "wb") as out:
        left, i = size, 0
        while left > 0:
            chunk = (i.to_bytes(8, "big") + block[8:])[:left]
            sha.update(chunk)
            out.write(chunk)
            left -= len(chunk)
            i += 1
    return sha.hexdigest()


def through_emulator(emu: Emulator, path: Path, sha: str, rounds: int, reads: int,
                     parts: int) -> Transfer:
    """Upload `rounds` versions and read each back `reads` times; check the metering."""
    size = path.stat().st_size
    out = Transfer(idle_rss_mb=PeakRss(emu.pid).now_mb())
    rss = PeakRss(emu.pid)
    rss.start()
    artifact = "bench/dataplane"
    tok = emu.call("POST", "artifacts/open", json={"artifact": artifact, "resume": "latest",
                                                   "place": PLACE})["token"]
    for step in range(1, rounds + 1):
        version = f"step-{step:08d}"
        w = emu.call("POST", "versions/write", json={
            "artifact": artifact, "token": tok, "version": version,
            "files": [{"name": "model.pt", "size": size, "sha256": sha}]})
        os.sync()  # no dirty pages of earlier writes throttling this one
        seconds = parallel([(w["files"][0]["url"], path)], _put_ok)
        out.upload.append(size / seconds / MB)
        emu.call("POST", "versions/commit",
                 json={"artifact": artifact, "token": tok, "upload": w["upload"]})
        v = emu.call("GET", "versions/read", params={
            "artifact": artifact, "version": version, "urls": 1, "place": "aws/us-east-1"})
        url = v["files"][0]["url"]
        for _ in range(reads):
            out.read.append(size / ranged_read(url, size, parts, path) / MB)
    out.peak_rss_mb = rss.peak_mb()
    out.peak_pss_mb = rss.peak_pss_mb
    usage = emu.call("GET", "usage/read", params={"artifact": artifact})
    metered = usage["routes"]["local"]
    want = (rounds * size, rounds * reads * size)
    if (metered["write_bytes"], metered["read_bytes"]) != want:
        raise RuntimeError(f"metering counted {metered}, expected write/read {want}")
    return out


def _put_ok(url: str, path: Path) -> None:
    status, body = put_file(url, path)
    if status >= 300:
        raise RuntimeError(f"PUT -> {status} {body[:300]!r}")


def through_moto(moto: Moto, path: Path, rounds: int, reads: int, parts: int) -> Transfer:
    """The same transfers through moto's S3 server with presigned PUT and GET URLs."""
    size = path.stat().st_size
    out = Transfer(idle_rss_mb=PeakRss(moto.pid).now_mb())
    rss = PeakRss(moto.pid, sample_pss=False)
    rss.start()
    s3 = moto.s3()
    s3.create_bucket(Bucket="bench")
    for i in range(rounds):
        params = {"Bucket": "bench", "Key": f"step-{i}/model.pt"}
        put = s3.generate_presigned_url("put_object", Params=params, ExpiresIn=3600)
        os.sync()
        out.upload.append(size / parallel([(put, path)], _put_ok) / MB)
        get = s3.generate_presigned_url("get_object", Params=params, ExpiresIn=3600)
        for _ in range(reads):
            out.read.append(size / ranged_read(get, size, parts, path) / MB)
        s3.delete_object(**params)  # moto keeps objects in memory; one at a time is fairer
    out.peak_rss_mb = rss.peak_mb()
    out.peak_pss_mb = rss.peak_pss_mb
    return out


def loopback(path: Path, workdir: Path, reads: int, parts: int) -> float:
    """Best MB/s of `parts` parallel raw-socket streams of the file (sendfile to recv_into).

    The same file, the same receiving code and the same sendfile() as the emulator, minus
    HTTP: what the emulator could at best reach on this machine (it may tie it)."""
    size = path.stat().st_size
    server = Process("loopback", [sys.executable, "-m", "bench.loopback", str(path)], workdir)
    try:
        port = int(server.wait_for(re.compile(r"READY (\d+)")).group(1))
        bounds = [(i * size // parts, (i + 1) * size // parts) for i in range(parts)]
        with open(path, "rb") as fh:
            checks = []
            for a, _ in bounds:
                fh.seek(a)
                checks.append(fh.read(4096))
        jobs = [(port, a, b, c) for (a, b), c in zip(bounds, checks, strict=True)]
        return max(size / parallel(jobs, read_range) / MB for _ in range(reads))
    finally:
        server.stop()
