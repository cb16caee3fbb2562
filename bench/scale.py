"""Scale: latency on an artifact with many versions, and the usage report over many transfers.

Committing 10,000 versions through HTTP would take minutes, so the history is seeded
straight into the SQLite file of a stopped emulator: one real version is committed through
the API, then its rows are copied under older step names (every column as the API wrote
it, so the schema can grow without breaking the seeding). Transfers are seeded the same
way, as rows the meter would have written. The emulator is then started on that data dir.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .client import latencies
from .servers import KEY, PLACE, Emulator

READER = "gcp/europe-west4"  # the box that resumes each version reads it from another cloud
PER_VERSION = 10  # metered requests per version: 2 PUTs and 8 ranged GETs
READ_PLACES = ("aws/us-west-2", "gcp/us-central1", "azure/eastus", "aws/eu-west-1",
               "gcp/asia-east1", "lambda/us-tx-1", "azure/westeurope", "aws/us-east-2",
               "gcp/europe-west1")


@dataclass
class Latencies:
    """Median seconds of each call, on the big artifact and on the one-version one."""

    open_many: float
    open_one: float
    read_many: float
    read_one: float
    usage_big: float  # `transfers` metered requests, aggregated into `rows` rows
    usage_small: float  # the two checkpoints' transfers only
    usage_worst: float  # as many rows as transfers: nothing aggregates
    transfers: int
    rows: int


class Api:
    """Sequential keep-alive calls with as little client overhead as http.client allows."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        self.prefix = u.path.rstrip("/")
        self.headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    def call(self, method: str, op: str, body: dict | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, f"{self.prefix}/{op}", body=data, headers=self.headers)
        resp = self.conn.getresponse()
        out = resp.read()
        if resp.status >= 400:
            raise RuntimeError(f"{op} -> {resp.status} {out[:300]!r}")
        return out

    def close(self) -> None:
        self.conn.close()


def _route(location: str, place: str) -> str:
    if place == location:
        return "local"
    return "inter_region" if place.split("/")[0] == location.split("/")[0] else "cross_cloud"


def seed(db: Path, artifact: str, versions: int, transfers: int) -> None:
    """Grow `artifact` (one real version, step `versions`) to `versions` versions, and meter
    `transfers` data-plane requests on it the way the emulator does: per version, two files
    PUT from the writer's region and eight ranged GETs from a box in another cloud, summed
    into one write row and one read row (the contract's aggregation)."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        with conn:
            real = conn.execute("SELECT * FROM versions WHERE artifact = ? AND step = ?",
                                (artifact, versions)).fetchone()
            files = conn.execute("SELECT * FROM version_files WHERE artifact = ? AND step = ?",
                                 (artifact, versions)).fetchall()
            _copy(conn, "versions", real,
                  [{"step": s, "version": f"step-{s:08d}"} for s in range(1, versions)])
            for f in files:
                _copy(conn, "version_files", f, [{"step": s} for s in range(1, versions)])
            conn.execute("UPDATE artifacts SET versions = ? WHERE name = ?", (versions, artifact))
            loc = real["location"]
            rows: dict[tuple, int] = {}
            for i in range(transfers):
                step, k = divmod(i, PER_VERSION)
                version = f"step-{step % versions + 1:08d}"
                if k < 2:  # PUT of model.pt or optim.pt
                    key = ("write", artifact, version, loc, loc, "local")
                    rows[key] = rows.get(key, 0) + (1 << 30)
                else:  # one of eight ranged GETs of 128 MiB
                    key = ("read", artifact, version, loc, READER, _route(loc, READER))
                    rows[key] = rows.get(key, 0) + (1 << 27)
            _insert_transfers(conn, [(*k, b) for k, b in rows.items()])
    finally:
        conn.close()


def seed_distinct(db: Path, artifact: str, versions: int, rows: int) -> None:
    """Worst case for the report: add read rows from more places until there are `rows`
    rows, none of which aggregates with another."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            have = conn.execute("SELECT COUNT(*), MIN(location) FROM transfers").fetchone()
            loc, extra = have[1], []
            for i in range(rows - have[0]):
                step, k = divmod(i, len(READ_PLACES))
                place = READ_PLACES[k]
                extra.append(("read", artifact, f"step-{step % versions + 1:08d}", loc, place,
                              _route(loc, place), 1 << 27))
            _insert_transfers(conn, extra)
    finally:
        conn.close()


def _insert_transfers(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    conn.executemany(
        "INSERT INTO transfers (direction, artifact, version, location, place, route, bytes) "
        "VALUES (?,?,?,?,?,?,?) ON CONFLICT (direction, artifact, version, location, place, "
        "route) DO UPDATE SET bytes = bytes + excluded.bytes", rows)


def _copy(conn: sqlite3.Connection, table: str, row: sqlite3.Row, changes: list[dict]) -> None:
    cols = row.keys()
    sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    conn.executemany(sql, [tuple({**dict(row), **c}[k] for k in cols) for c in changes])


def scale(data_dir: Path, workdir: Path, versions: int, transfers: int, n: int) -> Latencies:
    """Seed a stopped emulator's data dir, restart it, and time the calls one at a time."""
    first = Emulator(data_dir, workdir, name="emulator-seed")
    try:
        first.checkpoint("bench/one", 1, {"model.pt": b"m" * 4096})
        first.checkpoint("bench/many", versions, {"model.pt": b"m" * 4096})
        api = Api(first.api)
        [usage_small] = latencies([lambda: api.call("GET", "usage/read")], n)
        api.close()
    finally:
        first.stop()
    seed(data_dir / "metadata.sqlite3", "bench/many", versions, transfers)
    emu = Emulator(data_dir, workdir, name="emulator-scale")
    api = Api(emu.api)
    try:
        got = json.loads(api.call("GET", "usage/read"))
        rows = len(got["transfers"])
        reads = got["routes"]["cross_cloud"]["read_bytes"]
        if rows < 2 * (transfers // PER_VERSION) or reads != (transfers // PER_VERSION) << 30:
            raise RuntimeError(f"usage/read lists {rows} rows, {reads} bytes read")
        opened = json.loads(api.call("POST", "artifacts/open", _open("bench/many")))
        if opened["resume_from"]["step"] != versions:
            raise RuntimeError(f"open resumed from {opened['resume_from']['version']}")

        def read(artifact: str) -> bytes:
            return api.call("GET", f"versions/read?artifact={artifact}&version=latest&urls=1")

        def usage() -> bytes:
            return api.call("GET", "usage/read")

        open_many, open_one = latencies(
            [lambda: api.call("POST", "artifacts/open", _open("bench/many")),
             lambda: api.call("POST", "artifacts/open", _open("bench/one"))], n)
        read_many, read_one = latencies([lambda: read("bench/many"), lambda: read("bench/one")], n)
        [usage_big] = latencies([usage], max(5, n // 10))
        seed_distinct(data_dir / "metadata.sqlite3", "bench/many", versions, transfers)
        [usage_worst] = latencies([usage], 3)
        return Latencies(open_many, open_one, read_many, read_one, usage_big, usage_small,
                         usage_worst, transfers, rows)
    finally:
        api.close()
        emu.stop()


def _open(artifact: str) -> dict:
    return {"artifact": artifact, "resume": "latest", "place": PLACE, "holder": "bench"}
