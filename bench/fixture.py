"""What a project's own tests pay for the emulator: the `o41_emulator` fixture per test, a
`ThreadedEmulator`'s start, and a reset of an emulator holding thousands of artifacts.

The emulator runs in this process (that is the point of it), as a user's test session has it.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests

from .servers import PLACE

SEED_THREADS = 8


@dataclass
class FixtureCost:
    start: float  # seconds from start() to a 200 health answer, the app's modules loaded
    per_test: float  # seconds a test spends in the fixture (set-up and tear-down), median
    tests: int
    reset_call: float  # seconds of ThreadedEmulator.reset() over `artifacts` artifacts
    reset_http: float  # seconds of POST /_emulator/reset over as many, seeded again
    artifacts: int


def _one_artifact(session: requests.Session, api: str, name: str) -> None:
    """Open `name` and commit one version of one small file, as a trainer's first save."""
    body = name.encode()
    opened = session.post(f"{api}/artifacts/open", timeout=120, json={
        "artifact": name, "resume": "latest", "place": PLACE}).json()
    w = session.post(f"{api}/versions/write", timeout=120, json={
        "artifact": name, "token": opened["token"], "version": "step-00000001",
        "files": [{"name": "model.bin", "size": len(body),
                   "sha256": hashlib.sha256(body).hexdigest()}]}).json()
    requests.put(w["files"][0]["url"], data=body, timeout=120).raise_for_status()
    session.post(f"{api}/versions/commit", timeout=120, json={
        "artifact": name, "token": opened["token"], "upload": w["upload"]}).raise_for_status()


def seed(api: str, key: str, artifacts: int) -> None:
    """`artifacts` artifacts of one committed version each, through the API."""
    def batch(first: int) -> None:
        with requests.Session() as s:
            s.headers["Authorization"] = f"Bearer {key}"
            for i in range(first, artifacts, SEED_THREADS):
                _one_artifact(s, api, f"bench-reset/run-{i:05d}")

    with ThreadPoolExecutor(SEED_THREADS) as pool:
        list(pool.map(batch, range(SEED_THREADS)))


def reset_cost(artifacts: int, log) -> tuple[float, float, float]:
    """(start, reset(), POST /_emulator/reset) in seconds, each reset over `artifacts`."""
    from emulator import ThreadedEmulator

    t0 = time.perf_counter()
    with ThreadedEmulator() as emu:
        requests.get(f"{emu.url}/_emulator/health", timeout=60).raise_for_status()
        started = time.perf_counter() - t0
        log(f"seeding {artifacts:,} artifacts")
        seed(emu.api_url, emu.key, artifacts)
        t0 = time.perf_counter()
        emu.reset()
        by_call = time.perf_counter() - t0
        log(f"seeding {artifacts:,} artifacts again")
        seed(emu.api_url, emu.key, artifacts)
        t0 = time.perf_counter()
        requests.post(f"{emu.url}/_emulator/reset", timeout=600).raise_for_status()
        by_http = time.perf_counter() - t0
    return started, by_call, by_http


#: A user project's tests: each asks for the fixture and does nothing else, so the
#: duration pytest reports for its set-up and tear-down is the fixture's cost.
USER_TESTS = """
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_nothing(o41_emulator, n):
    pass
"""


def fixture_per_test(workdir: Path, tests: int) -> float:
    """Median seconds of set-up plus tear-down of `o41_emulator` per test, from pytest's own
    durations (`--durations`), in a user project of `tests` tests; the first test, which
    starts the session's emulator, is left out."""
    project = workdir / "fixture-project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_fixture_cost.py").write_text(textwrap.dedent(USER_TESTS.format(
        tests=tests)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("O41_", "PYTEST_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--durations=0", "--durations-min=0"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the fixture's project failed: {done.stdout[-2000:]}")
    per: dict[str, float] = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].endswith("s") and parts[1] in ("setup", "teardown"):
            per[parts[2]] = per.get(parts[2], 0.0) + float(parts[0][:-1])
    first = "test_fixture_cost.py::test_nothing[0]"
    costs = [v for k, v in per.items() if k != first]
    return statistics.median(costs)


def measure(workdir: Path, artifacts: int, tests: int, log) -> FixtureCost:
    log(f"the o41_emulator fixture over {tests} tests")
    per_test = fixture_per_test(workdir, tests)
    start, by_call, by_http = reset_cost(artifacts, log)
    return FixtureCost(start, per_test, tests, by_call, by_http, artifacts)
