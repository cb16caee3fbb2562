"""Randomized stress: many rounds of racing PUTs, commits and reclaims against a served
emulator on each storage backend, checking every accepted commit byte for byte.

Three race kinds, each trial on its own artifact, 12 trials at once:
- late_put: a correct upload, then a PUT of other bytes to the same URL, cut at a random
  point, racing the commit; then it finishes or hangs up.
- twin_puts: a correct and a wrong body PUT to one URL at once; the commit is sent as
  soon as the first of them is done, racing the second.
- reclaim: uploads that live 1 s, committed at a random moment around their expiry while
  another call runs the reclaim.
Every accepted commit is read back right away and again at the end. Trials per kind and
backend: `O41_RACE_TRIALS` (default 12); seed: `O41_RACE_SEED`.
"""

from __future__ import annotations

import collections
import os
import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import pytest

from tests.support.emulator_http import AWS, Box, Http, SpreadHttp, sha
from tests.support.race_tools import RawPut

pytestmark = pytest.mark.slow  # the slow tier (conftest.py): the race stress

TRIALS = int(os.environ.get("O41_RACE_TRIALS", "12"))
LIFETIME = 1.0  # upload_lifetime of the reclaim server, in seconds
CONCURRENT = 12


class Trials:
    """Counts what happened, and keeps every accepted commit to check it again later."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: collections.Counter = collections.Counter()
        self.accepted: list[tuple[Http, Box, bytes]] = []
        self.bad: list[str] = []
        self.clients: list[Http] = []

    def http(self, url: str | tuple[str, ...]) -> Http:
        """A client of one node, or one spreading its calls over the nodes of a tuple."""
        client = SpreadHttp(url) if isinstance(url, tuple) else Http(url)
        with self.lock:
            self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            assert client.session is not None
            client.session.close()

    def count(self, kind: str, what: str) -> None:
        with self.lock:
            self.counts[kind, what] += 1

    def commit(self, kind: str, http: Http, box: Box, upload: str, good: bytes) -> None:
        c = box.commit(upload)
        self.count(kind, f"commit {c.status} {c.code or ''}".strip())
        if c.status == 200:
            with self.lock:
                self.accepted.append((http, box, good))
            self.verify(http, box, good, "at once")
        else:
            assert c.status in (404, 409), c.body  # refused, never a server error

    def verify(self, http: Http, box: Box, good: bytes, when: str) -> None:
        r = box.read("step-00000001")
        problem = None
        if r.status != 200:
            problem = f"read {r.status} {r.code}"
        else:
            f = r.body["files"][0]
            got = http.request("GET", f["url"], key=None)
            if f["sha256"] != sha(good) or got.status != 200 or sha(got.content) != sha(good):
                problem = f"GET {got.status}, {len(got.content)} of {len(good)} bytes"
        if problem:
            with self.lock:
                self.bad.append(f"{box.artifact} {when}: {problem}")


def put_racing(url: str, body: bytes, rng: random.Random, hang_up: bool) -> int | None:
    """PUT `body` in two parts with a random pause between; None if it hung up."""
    raw = RawPut(url, len(body))
    cut = rng.randrange(len(body) + 1)
    raw.send(body[:cut])
    time.sleep(rng.uniform(0, 0.01))
    if hang_up:
        raw.hang_up()
        return None
    raw.send(body[cut:])  # a server that refused early may have stopped reading
    return raw.reply()[0]


def late_put(emu, trials: Trials, rng: random.Random) -> None:
    http = trials.http(emu.url)
    box = Box(http, f"race/late-{rng.getrandbits(48):x}", AWS)
    assert box.open().status == 200
    good = rng.randbytes(rng.randrange(1, 300_000))
    w = box.write("step-00000001", {"m": good})
    box.upload(w, {"m": good})
    other = rng.randbytes(len(good))
    hang_up = rng.random() < 0.3
    with ThreadPoolExecutor(1) as pool:
        put = pool.submit(put_racing, w.body["files"][0]["url"], other, rng, hang_up)
        time.sleep(rng.uniform(0, 0.01))
        trials.commit("late_put", http, box, w.body["upload"], good)
        status = put.result()
    trials.count("late_put", "late PUT hung up" if status is None else f"late PUT {status}")


def twin_puts(emu, trials: Trials, rng: random.Random) -> None:
    http = trials.http(emu.url)
    box = Box(http, f"race/twin-{rng.getrandbits(48):x}", AWS)
    assert box.open().status == 200
    good = rng.randbytes(rng.randrange(1, 300_000))
    wrong = rng.randbytes(len(good))
    w = box.write("step-00000001", {"m": good})
    url = w.body["files"][0]["url"]
    seeds = rng.getrandbits(32), rng.getrandbits(32)
    with ThreadPoolExecutor(2) as pool:
        puts = [pool.submit(put_racing, url, body, random.Random(seed), False)
                for body, seed in zip((good, wrong), seeds, strict=True)]
        # Commit just as the first PUT is done: the second is then still under way.
        wait(puts, return_when=FIRST_COMPLETED)
        time.sleep(rng.uniform(0, 0.005))
        trials.commit("twin_puts", http, box, w.body["upload"], good)
        statuses = [p.result() for p in puts]
    trials.count("twin_puts", "PUTs " + "/".join(map(str, statuses)))


def reclaim(emu, trials: Trials, rng: random.Random) -> None:
    http = trials.http(emu.url)
    box = Box(http, f"race/reclaim-{rng.getrandbits(48):x}", AWS)
    assert box.open().status == 200
    other = Box(http, f"race/other-{rng.getrandbits(48):x}", AWS)
    assert other.open().status == 200
    good = rng.randbytes(rng.randrange(1, 100_000))
    start = time.monotonic()
    w = box.write("step-00000001", {"m": good})
    up = http.request("PUT", w.body["files"][0]["url"], key=None, data=good)
    if up.status != 200:  # on a loaded machine the upload itself may outlive its lifetime
        assert (up.status, up.code) == (409, "incomplete"), up.body
        trials.count("reclaim", "upload expired first")

    def reclaim_soon() -> None:  # every write runs the reclaim first
        time.sleep(max(0.0, start + LIFETIME * rng.uniform(0.8, 1.3) - time.monotonic()))
        other.write("step-00000001", {"x": b"x"})

    with ThreadPoolExecutor(1) as pool:
        reclaimer = pool.submit(reclaim_soon)
        time.sleep(max(0.0, start + LIFETIME * rng.uniform(0.7, 1.2) - time.monotonic()))
        trials.commit("reclaim", http, box, w.body["upload"], good)
        reclaimer.result()


KINDS = {"late_put": late_put, "twin_puts": twin_puts, "reclaim": reclaim}


@pytest.mark.parametrize("storage", ["fs", pytest.param("s3", marks=pytest.mark.s3)])
def test_racing_puts_commits_and_reclaims_never_change_a_committed_version(
        live_factory, request, tmp_path, storage):
    args = ["--quiet"]
    if storage == "s3":
        args += request.getfixturevalue("s3_server").serve_args()
    short = tmp_path / "short.toml"
    short.write_text(f"upload_lifetime = {LIFETIME:g}\n")  # an int setting: "1", not "1.0"
    servers = {"late_put": live_factory(*args), "twin_puts": None,
               "reclaim": live_factory(*args, "--config", str(short))}
    servers["twin_puts"] = servers["late_put"]
    run_stress(servers, storage)


def run_stress(servers: dict, label: str) -> None:
    """Every kind's trials at once, CONCURRENT at a time, against `servers[kind]` (anything
    with a `url`: one node's, or a tuple of nodes' URLs to spread the calls over)."""
    seed = int(os.environ.get("O41_RACE_SEED", random.randrange(1 << 30)))
    master = random.Random(seed)
    plan = [(kind, random.Random(master.getrandbits(64))) for kind in KINDS
            for _ in range(TRIALS)]
    master.shuffle(plan)
    trials = Trials()
    began = time.monotonic()
    try:
        with ThreadPoolExecutor(CONCURRENT) as pool:
            for done in [pool.submit(KINDS[kind], servers[kind], trials, rng)
                         for kind, rng in plan]:
                done.result()
        # Let every upload left open expire, and reclaim them all (a write runs the
        # reclaim), before reading every accepted version again.
        final = Box(trials.http(servers["reclaim"].url), "race/final", AWS)
        assert final.open().status == 200
        time.sleep(LIFETIME)
        assert final.write("step-00000001", {"x": b"x"}).status == 200
        for http, box, good in trials.accepted:
            trials.verify(http, box, good, "at the end")
    finally:
        trials.close()
    accepted = collections.Counter(k for (k, what), n in trials.counts.items()
                                   for _ in range(n) if what == "commit 200")
    print(f"\n{label}: seed {seed}, {TRIALS} trials per kind in "
          f"{time.monotonic() - began:.1f} s")
    for (kind, what), n in sorted(trials.counts.items()):
        print(f"  {kind:10} {what:28} {n}")
    print(f"  committed versions changed or vanished: {len(trials.bad)}")
    assert trials.bad == []
    assert sum(accepted.values()) > 0 and len(trials.accepted) == sum(accepted.values())
