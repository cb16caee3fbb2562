"""Fencing under real concurrency: several worker processes, many client threads, one artifact."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from tests.support.emulator_http import AWS, GCP, Box, SpreadHttp

THREADS, ROUNDS, CHECKPOINTS = 8, 24, 4


class CountingHttp(SpreadHttp):
    """Counts every call, so the test can show it raced thousands of operations."""

    calls = itertools.count()

    def request(self, *args, **kwargs):
        next(self.calls)
        return super().request(*args, **kwargs)


def test_racing_opens_and_commits_keep_fencing_across_worker_processes(live_factory, tmp_path,
                                                                       artifact):
    emu = live_factory("--data-dir", str(tmp_path / "d"), "--workers", "3", "--threads", "8")
    race_boxes([emu.url], artifact)


def race_boxes(urls: Sequence[str], artifact: str) -> None:
    """THREADS boxes open, write and commit one artifact at once, each call to the next of
    `urls` (the nodes of one emulator): no commit of an older epoch lands after a newer
    open, and none accepted is lost."""
    start = next(CountingHttp.calls)
    steps = itertools.count(1)
    lock = threading.Lock()
    opens: list[tuple[float, int]] = []  # (time the open returned, epoch)
    accepted: list[tuple[float, int, str]] = []  # (time the commit was sent, epoch, version)
    deadline = time.monotonic() + 120  # bounded in time as well as in count

    def worker(i: int) -> None:
        http = CountingHttp(urls[i % len(urls):] + urls[:i % len(urls)])
        for round_ in range(ROUNDS):
            if time.monotonic() > deadline:
                return
            box = Box(http, artifact, AWS if i % 2 else GCP, holder=f"w{i}-{round_}")
            r = box.open("latest")
            assert r.status == 200, r.body
            with lock:
                opens.append((time.monotonic(), r.body["epoch"]))
            for _ in range(CHECKPOINTS):
                with lock:
                    version = f"step-{next(steps):08d}"
                files = {"m": version.encode()}
                w = box.write(version, files)
                if w.status != 200:
                    assert w.code in ("fenced", "not_after_latest"), w.body
                    continue
                box.upload(w, files)
                sent = time.monotonic()
                c = box.commit(w.body["upload"])
                if c.status == 200:
                    with lock:
                        accepted.append((sent, c.body["epoch"], version))
                else:
                    assert c.code in ("fenced", "not_after_latest"), c.body

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))

    calls = next(CountingHttp.calls) - start
    print(f"{calls} calls, {len(opens)} opens, {len(accepted)} commits accepted")
    assert accepted and len(opens) == THREADS * ROUNDS
    assert calls >= 1000  # thousands of racing operations, not a handful
    epochs = sorted(e for _, e in opens)
    assert epochs == list(range(1, len(opens) + 1))  # unique, no gaps: every open counted
    for sent, epoch, version in accepted:
        newer_done = [e for t, e in opens if t < sent and e > epoch]
        assert not newer_done, f"{version} of epoch {epoch} accepted after epoch {newer_done}"
    listed = SpreadHttp(urls).request("GET", "/api/v1/versions/list",
                                      params={"artifact": artifact})
    visible = [(v["version"], v["epoch"]) for v in listed.body["versions"]]
    assert sorted(v for v, _ in visible) == sorted(v for _, _, v in accepted)  # none lost
    visible_epochs = [e for _, e in visible]
    assert visible_epochs == sorted(visible_epochs)  # an older epoch never lands after a newer
