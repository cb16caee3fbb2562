"""Metadata engines side by side: one node over SQLite, one node over PostgreSQL, two nodes
over one PostgreSQL, measured in turns in one run.

Two figures per configuration: open+write+commit cycles per second (each client its own
artifact, a version with no files, so only metadata is measured: three calls, two of them
write transactions), and `versions/read?urls=1` requests per second. With two nodes every
client sends its calls to the nodes in turn, and the read load is split between them.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .client import Rate, request_rate
from .postgres import Postgres
from .scale import Api
from .servers import KEY, PLACE, Emulator

CONFIGS = ("1 node, SQLite", "1 node, PostgreSQL", "2 nodes, PostgreSQL")


@dataclass
class EngineRates:
    cycles: dict[str, float]  # open+write+commit cycles per second, by configuration
    reads: dict[str, float]  # versions/read?urls=1 per second


def _cycles(urls: list[str], clients: int, seconds: float) -> float:
    """Closed-loop open, write, commit from `clients` threads; cycles per second."""
    counts = [0] * clients
    run = uuid.uuid4().hex[:8]  # every turn on new artifacts
    stop = threading.Event()
    failures: list[str] = []

    def client(i: int) -> None:
        apis = [Api(url + "/api/v1") for url in urls]
        turn = i
        n = 0
        while not stop.is_set():
            artifact = f"bench/engines-{run}-{i}-{n}"

            def call(op: str, body: dict) -> dict:
                nonlocal turn
                turn += 1
                return json.loads(apis[turn % len(apis)].call("POST", op, body))

            try:
                tok = call("artifacts/open", {"artifact": artifact, "place": PLACE})["token"]
                w = call("versions/write", {"artifact": artifact, "token": tok,
                                            "version": "step-00000001", "files": []})
                call("versions/commit", {"artifact": artifact, "token": tok,
                                         "upload": w["upload"]})
            except Exception as exc:  # noqa: BLE001 - reported once, after the run
                failures.append(repr(exc))
                return
            n += 1
            counts[i] = n

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(min(0.5, seconds / 4))  # warm-up: connections made, first statements compiled
    before, t0 = sum(counts), time.perf_counter()
    time.sleep(seconds)
    done, elapsed = sum(counts) - before, time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join(120)
    if failures:
        raise RuntimeError(f"open+write+commit failed: {failures[0]}")
    return done / elapsed


def _reads(urls: list[str], clients: int, seconds: float) -> float:
    """versions/read?urls=1 from `clients` connections split over the nodes; req/s."""
    per = max(1, clients // len(urls))
    rates: list[Rate] = []
    lock = threading.Lock()

    def one(url: str) -> None:
        r = request_rate(f"{url}/api/v1/versions/read?artifact=bench/engines-read&"
                         "version=latest&urls=1", clients=per, seconds=seconds,
                         headers={"Authorization": f"Bearer {KEY}"}, warmup=0.2)
        with lock:
            rates.append(r)

    threads = [threading.Thread(target=one, args=(u,)) for u in urls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if any(r.errors or not r.requests for r in rates):
        raise RuntimeError(f"versions/read: errors {[r.errors for r in rates]}")
    return sum(r.per_second for r in rates)


def measure(work: Path, clients: int, seconds: float, log) -> EngineRates:
    pg = Postgres().start()
    nodes: dict[str, list[Emulator]] = {}
    try:
        log("engines: SQLite, PostgreSQL, two nodes on PostgreSQL")
        nodes[CONFIGS[0]] = [Emulator(work / "engines-sqlite", work, name="engine-sqlite")]
        one = pg.database()
        nodes[CONFIGS[1]] = [Emulator(work / "engines-pg", work, "--database", one,
                                      name="engine-pg")]
        two = pg.database()
        # Two nodes of one emulator share one storage (the same data dir), or the second
        # refuses to start: it could not serve the first one's bytes.
        nodes[CONFIGS[2]] = [Emulator(work / "engines-pg2", work, "--database", two,
                                      name=f"engine-pg2-{i}") for i in range(2)]
        for emus in nodes.values():
            emus[0].checkpoint("bench/engines-read", 1, {"model.pt": b"m" * 4096})
        cycles = {c: 0.0 for c in CONFIGS}
        reads = {c: 0.0 for c in CONFIGS}
        for emus in nodes.values():  # a turn not counted: connections made, SQL compiled
            _cycles([e.url for e in emus], clients, 1.0)
        turns = 3  # in turns, so a burst of load from elsewhere falls on all alike
        for _ in range(turns):
            for config, emus in nodes.items():
                urls = [e.url for e in emus]
                cycles[config] += _cycles(urls, clients, max(1.0, seconds / turns)) / turns
                reads[config] += _reads(urls, clients, seconds / turns) / turns
        return EngineRates(cycles, reads)
    finally:
        for emus in nodes.values():
            for e in emus:
                e.stop()
        pg.stop()
