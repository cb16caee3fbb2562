"""Memory under a mixed load: does the server's RSS level off, or grow with every request?

Raw writers (open, write, signed PUTs, commit, as `curl` would), fsspec writers (the
``o41://`` filesystem, two files of a step in one transaction) and readers (versions/read
with signed URLs, then a whole or ranged GET) run together against one served emulator for
a fixed time, while a sampler records the RSS (and PSS) of gunicorn's process tree.

The figure is RSS at the end over RSS in the middle: an allocator that has found its working
set stays flat (goal: within 20%); something kept per request grows with the run.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import requests

from .servers import KEY, PLACE, Emulator, PeakRss

READ_PLACE = "gcp/europe-west4"  # readers elsewhere: their GETs are metered cross-cloud


@dataclass
class Sample:
    at: float
    rss_mb: float
    pss_mb: float


@dataclass
class Soak:
    """What one soak saw: RSS samples, requests by kind, and any error."""

    seconds: float
    clients: dict[str, int]
    samples: list[Sample] = field(default_factory=list)
    done: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    versions: int = 0

    def at(self, fraction: float) -> Sample:
        """The sample nearest `fraction` of the run (0 = before the load, 1 = its end)."""
        when = fraction * self.seconds
        return min(self.samples, key=lambda s: abs(s.at - when))

    @property
    def growth(self) -> float:
        """RSS at the end over RSS in the middle (1.0 is flat)."""
        return self.at(1.0).rss_mb / self.at(0.5).rss_mb


class _Artifacts:
    """Committed (artifact, version, file, size) the readers pick from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[tuple[str, str]] = []

    def add(self, artifact: str, version: str) -> None:
        with self._lock:
            self._items.append((artifact, version))
            del self._items[:-500]  # recent ones: the whole history is not the point

    def pick(self, rng: random.Random) -> tuple[str, str] | None:
        with self._lock:
            return rng.choice(self._items) if self._items else None


def _raw_writer(emu: Emulator, n: int, stop: threading.Event, soak: Soak, seen: _Artifacts,
                sizes: tuple[int, int]) -> None:
    rng = random.Random(n)
    artifact = f"soak/raw-{n:02d}"
    with requests.Session() as s:
        s.headers["Authorization"] = f"Bearer {KEY}"
        step = 0
        while not stop.is_set():
            step += 1
            files = {name: os.urandom(rng.randint(*sizes)) for name in ("model.pt", "optim.pt")}
            listed = [{"name": k, "size": len(v), "sha256": hashlib.sha256(v).hexdigest()}
                      for k, v in files.items()]
            try:
                tok = _ok(s.post(f"{emu.api}/artifacts/open", json={
                    "artifact": artifact, "resume": "latest", "place": PLACE}))["token"]
                version = f"step-{step:08d}"
                w = _ok(s.post(f"{emu.api}/versions/write", json={
                    "artifact": artifact, "token": tok, "version": version, "files": listed}))
                for f in w["files"]:
                    _ok(s.put(f["url"], data=files[f["name"]]))
                _ok(s.post(f"{emu.api}/versions/commit", json={
                    "artifact": artifact, "token": tok, "upload": w["upload"]}))
            except _Refused as exc:
                soak.errors[f"raw writer: {exc}"] += 1
                continue
            seen.add(artifact, version)
            soak.done["raw commits"] += 1


def _fsspec_writer(emu: Emulator, n: int, stop: threading.Event, soak: Soak,
                   seen: _Artifacts, sizes: tuple[int, int]) -> None:
    import fsspec

    rng = random.Random(1000 + n)
    artifact = f"soak/fs-{n:02d}"
    fs = fsspec.filesystem("o41", api_url=emu.api, api_key=KEY, place="aws/us-east-1",
                           skip_instance_cache=True)
    step = 0
    while not stop.is_set():
        step += 1
        version = f"step-{step:08d}"
        base = f"o41://{artifact}/{version}"
        try:
            with fs.transaction:  # two files, one version (a lone close would commit)
                fs.pipe_file(f"{base}/weights.bin", os.urandom(rng.randint(*sizes)))
                fs.pipe_file(f"{base}/commit_success.txt", b"ok")
        except Exception as exc:  # the client's errors name the call; count and go on
            soak.errors[f"fsspec writer: {type(exc).__name__}"] += 1
            continue
        seen.add(artifact, version)
        soak.done["fsspec commits"] += 1


def _reader(emu: Emulator, n: int, stop: threading.Event, soak: Soak, seen: _Artifacts) -> None:
    rng = random.Random(2000 + n)
    with requests.Session() as s:
        s.headers["Authorization"] = f"Bearer {KEY}"
        while not stop.is_set():
            pick = seen.pick(rng)
            if pick is None:
                stop.wait(0.05)
                continue
            artifact, version = pick
            try:
                v = _ok(s.get(f"{emu.api}/versions/read", params={
                    "artifact": artifact, "version": version, "urls": "1",
                    "place": READ_PLACE}))
                f = rng.choice(v["files"])
                ranged = rng.random() < 0.5 and f["size"] > 1
                headers = {"Range": f"bytes=0-{f['size'] // 2}"} if ranged else {}
                got = s.get(f["url"], headers=headers)
                if got.status_code not in (200, 206):
                    raise _Refused(f"GET {got.status_code}")
            except _Refused as exc:
                soak.errors[f"reader: {exc}"] += 1
                continue
            soak.done["reads"] += 1
            if rng.random() < 0.05:
                _ok(s.get(f"{emu.api}/usage/read", params={"artifact": artifact}))
                soak.done["usage reads"] += 1


class _Refused(RuntimeError):
    pass


def _ok(r: requests.Response) -> dict:
    if r.status_code >= 300:
        raise _Refused(f"{r.request.method} {r.url.split('?')[0].rsplit('/', 2)[-2:]} "
                       f"{r.status_code}")
    return r.json()


def run(work: Path, seconds: float, raw: int = 12, fs: int = 8, readers: int = 12,
        every: float = 5.0, sizes: tuple[int, int] = (16 << 10, 256 << 10),
        serve_args: tuple[str, ...] = (), log=print) -> Soak:
    """The mixed load for `seconds` on a fresh emulator (2 workers x 64 threads, the
    defaults, unless `serve_args` say otherwise), sampling its process tree's RSS every
    `every` seconds."""
    emu = Emulator(work / "data-soak", work, *serve_args, name="emulator-soak")
    soak = Soak(seconds, {"raw writers": raw, "fsspec writers": fs, "readers": readers})
    stop = threading.Event()
    seen = _Artifacts()
    meter = PeakRss(emu.pid, sample_pss=False)
    try:
        t0 = time.perf_counter()
        soak.samples.append(Sample(0.0, meter.now_mb(), meter.pss_mb()))
        threads = [threading.Thread(target=_raw_writer, args=(emu, i, stop, soak, seen, sizes))
                   for i in range(raw)]
        threads += [threading.Thread(target=_fsspec_writer,
                                     args=(emu, i, stop, soak, seen, sizes)) for i in range(fs)]
        threads += [threading.Thread(target=_reader, args=(emu, i, stop, soak, seen))
                    for i in range(readers)]
        for t in threads:
            t.start()
        next_log = t0 + 60
        while (now := time.perf_counter()) - t0 < seconds:
            time.sleep(min(every, max(0.0, seconds - (now - t0))))
            sample = Sample(time.perf_counter() - t0, meter.now_mb(), meter.pss_mb())
            soak.samples.append(sample)
            if time.perf_counter() >= next_log:
                next_log += 60
                errors = sum(soak.errors.values())
                log(f"soak {sample.at:.0f} s: RSS {sample.rss_mb:.0f} MB, PSS "
                    f"{sample.pss_mb:.0f} MB, {dict(soak.done)}, errors {errors}")
        stop.set()
        for t in threads:
            t.join(120)
        soak.versions = soak.done["raw commits"] + soak.done["fsspec commits"]
    finally:
        stop.set()
        emu.stop()
    return soak


def render(soak: Soak) -> str:
    """The soak's figures as a few lines of text (and the per-minute RSS curve)."""
    start, warm, mid, end = (soak.at(f) for f in (0.0, 0.1, 0.5, 1.0))
    lines = [
        f"mixed load {soak.seconds:.0f} s: " + ", ".join(f"{n} {k}" for k, n in
                                                         soak.clients.items()),
        "requests: " + ", ".join(f"{k} {n:,}" for k, n in soak.done.items()),
        f"errors: {sum(soak.errors.values())} {dict(soak.errors) if soak.errors else ''}".rstrip(),
        f"RSS (sum over gunicorn's processes): start {start.rss_mb:.0f} MB, at 10% "
        f"{warm.rss_mb:.0f} MB, middle {mid.rss_mb:.0f} MB, end {end.rss_mb:.0f} MB",
        f"PSS: start {start.pss_mb:.0f} MB, middle {mid.pss_mb:.0f} MB, end {end.pss_mb:.0f} MB",
        f"end / middle: {soak.growth:.2f} (goal <= 1.20: {'yes' if soak.growth <= 1.2 else 'NO'})",
        "RSS by minute: " + " ".join(f"{soak.at(min(1.0, m * 60 / soak.seconds)).rss_mb:.0f}"
                                     for m in range(int(soak.seconds // 60) + 1)),
    ]
    return "\n".join(lines)
