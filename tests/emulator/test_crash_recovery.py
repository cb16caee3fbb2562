"""SIGKILL the whole emulator at random points of uploads and commits, restart, check it all.

After every restart on the same data dir: every acknowledged commit is visible and
byte-exact, every visible version is complete, and no partial upload outlives its upload's
lifetime on disk (younger ones may be another process's PUT in flight, so they stay).
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time

import pytest
import requests

from tests.support.deadlines import HANG_GUARD
from tests.support.emulator_http import AWS, Box, Http
from tests.support.served import Emulator

pytestmark = pytest.mark.slow  # the slow tier (conftest.py): SIGKILL recovery, 50 kills

KILL_POINTS = 50


def crashable(data_dir: str, *args: str) -> Emulator:
    """One worker, so a SIGKILL of the group (``kill()``) cuts it mid-request."""
    return Emulator("--workers", "1", "--data-dir", data_dir, *args).start()


def workload(box: Box, acked: dict[str, dict[str, str]], stop: threading.Event,
             rng: random.Random) -> None:
    """Checkpoint continuously until the server dies; record what was acknowledged."""
    try:
        opened = box.open("latest")
        step = opened.body["resume_from"]["step"] if opened.body["resume_from"] else 0
        while not stop.is_set():
            step += 1
            version = f"step-{step:08d}"
            files = {f"f{i}.bin": rng.randbytes(rng.choice([0, 10, 5000, 2 << 20]))
                     for i in range(rng.randint(1, 3))}
            w = box.write(version, files)
            if w.status != 200:
                return
            box.upload(w, files)
            c = box.commit(w.body["upload"])
            if c.status == 200:
                acked[version] = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
    except (requests.RequestException, AssertionError, KeyError, TypeError):
        return  # the server died under us: that is the point


def verify(http: Http, artifact: str, acked: dict[str, dict[str, str]]) -> int:
    listed = http.request("GET", "/api/v1/versions/list", params={"artifact": artifact})
    if listed.status == 404:
        assert not acked
        return 0
    visible = [v["version"] for v in listed.body["versions"]]
    assert set(acked) <= set(visible), f"lost acknowledged commits {set(acked) - set(visible)}"
    for version in visible:
        v = http.request("GET", "/api/v1/versions/read",
                         params={"artifact": artifact, "version": version, "urls": "1"}).body
        for f in v["files"]:
            data = requests.get(f["url"], timeout=30).content
            assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size"]
            if version in acked:
                assert acked[version][f["name"]] == f["sha256"]
    return len(visible)


def test_sigkill_at_random_points_loses_no_acknowledged_commit(tmp_path, artifact):
    data_dir = str(tmp_path / "data")
    rng = random.Random(41)
    acked: dict[str, dict[str, str]] = {}
    interrupted = 0
    for _ in range(KILL_POINTS):
        emu = crashable(data_dir)
        stop = threading.Event()
        box = Box(Http(emu.url), artifact, AWS)
        worker = threading.Thread(target=workload, args=(box, acked, stop, rng))
        worker.start()
        time.sleep(rng.uniform(0.0, 0.25))  # a random kill point, not a timing assertion
        emu.kill()
        stop.set()
        worker.join(timeout=HANG_GUARD)
        interrupted += 1
    # The last start has a 1 s upload lifetime and comes once every cut-off PUT is older
    # than that: then none of them can belong to an upload in flight, and all must go.
    short = tmp_path / "short.toml"
    short.write_text("upload_lifetime = 1\n")
    partials = os.path.join(data_dir, "buckets", ".partial")
    deadline = time.monotonic() + 120  # a hang guard: they age in 1.5 s
    while any(os.stat(os.path.join(partials, name)).st_mtime > time.time() - 1.5
              for name in os.listdir(partials)):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    emu = crashable(data_dir, "--config", str(short))
    try:
        visible = verify(Http(emu.url), artifact, acked)
        assert os.listdir(partials) == []  # cut-off uploads were reclaimed at restart
    finally:
        emu.kill()
    print(f"{interrupted} kills, {len(acked)} acknowledged commits, {visible} visible")
    assert interrupted == KILL_POINTS and visible >= len(acked) > 0
