"""Keys stay out of everything a conformance run shows: reports, tracebacks, captured output
and the process arguments of the suites the mutant and legal tables start.

The run is made to fail (an emulator with faults behind a URL target) so that tracebacks,
JUnit failures and report steps exist, with pytest's longest tracebacks and the frames'
locals (``--tb=long -l``), where a key in a repr would show.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.env import Env, ScopedKey
from conformance.model import Topology
from conformance.mutants.runner import Target, _run_suite, pytest_command, suite_env
from conformance.shown import Secrets, mask_argv
from conformance.spawn import SpawnedEmulator
from tests.support.fake_targets import run_suite

HAS_EMULATOR = bool(
    Path(sys.executable).with_name("o41-emulator").exists() or shutil.which("o41-emulator")
)
WRITE_KEY = "ak_W41te5ecretZq"
READ_KEY = "ak_R34d5ecretXk"
SCOPED_KEY = "ak_5c0ped5ecretY"
KEYS = (WRITE_KEY, READ_KEY, SCOPED_KEY)
CONFIG = (
    f'[[keys]]\nkey = "{WRITE_KEY}"\nscopes = [{{ prefix = "", access = "write" }}]\n\n'
    f'[[keys]]\nkey = "{READ_KEY}"\nscopes = [{{ prefix = "", access = "read" }}]\n\n'
    f'[[keys]]\nkey = "{SCOPED_KEY}"\nscopes = [{{ prefix = "scoped/", access = "write" }}]\n'
)


def _leaks(text: str) -> list[str]:
    """Keys found in ``text``, whole or as a run of 8 of their characters."""
    return [k for k in KEYS if any(k[i:i + 8] in text for i in range(len(k) - 7))]


@pytest.fixture(scope="module")
def broken_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An emulator that does not fence and checks no key: FENCE and AUTH tests fail."""
    proc = SpawnedEmulator(tmp_path_factory.mktemp("secrets"), config=CONFIG,
                           faults=["no-fencing", "no-key-check"])
    url = proc.start()
    try:
        yield url
    finally:
        proc.stop()


@pytest.mark.slow  # a whole failing suite run (29 s); the masking itself is tested below
@pytest.mark.skipif(not HAS_EMULATOR, reason="o41-emulator not installed")
def test_no_key_in_reports_tracebacks_or_output_of_a_failing_run(
    broken_target: str, tmp_path: Path
) -> None:
    reports = [tmp_path / "r.json", tmp_path / "r.html", tmp_path / "junit.xml"]
    done = run_suite(
        "--target", broken_target, "--api-key", WRITE_KEY, "--read-key", READ_KEY,
        f"--scoped-key={SCOPED_KEY}=scoped/", "--prefix", "conf-secrets",
        "--rules", "FENCE-2,AUTH-1", "--tb=long", "-l", "-rA",
        "--conformance-report", str(reports[0]), "--conformance-html", str(reports[1]),
        "--junitxml", str(reports[2]),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    data = json.loads(reports[0].read_text())
    assert data["failures"] and data["verdict"]["base"] == "fail"
    assert "Env(" in out, "a traceback shows the Env repr (and so would show a key)"
    for name, text in [("output", out), *((p.name, p.read_text()) for p in reports)]:
        assert not _leaks(text), f"a key shows in the {name}"
    assert "--api-key *** --read-key *** --scoped-key=***=scoped/" in data["command"]


def test_env_and_scoped_key_reprs_mask_keys() -> None:
    env = Env(base="http://h/api/v1", key=WRITE_KEY, topology=Topology.parse(), prefix="p",
              read_key=READ_KEY, scoped=ScopedKey.parse(f"{SCOPED_KEY}=scoped/"))
    assert not _leaks(repr(env)) and "scoped/" in repr(env)
    assert not _leaks(repr(Target("http://h", WRITE_KEY, READ_KEY, f"{SCOPED_KEY}=s/")))


def test_masks_keys_their_near_copies_and_key_options() -> None:
    secrets = Secrets([WRITE_KEY, None, "ab"])  # too short to mask: "ab"
    off = [f"{WRITE_KEY}x", WRITE_KEY[:-1], WRITE_KEY.upper(), WRITE_KEY[:5] + WRITE_KEY[6:],
           WRITE_KEY[:-1] + "!"]
    assert secrets.mask(f"Bearer {WRITE_KEY}, ab") == "Bearer ***, ab"
    # A copy one short may take the character after it along: masking more is no leak.
    masked = [secrets.mask(f"<{k}> and more") for k in off]
    assert all(m.startswith("<***") and m.endswith(" and more") for m in masked), masked
    assert not _leaks(" ".join(masked))
    # Words a key shares with the suite's own text stay: spawn's keys hold "conformance".
    spawn = Secrets(["ak_conformance_reader", "ak_local"])
    assert spawn.mask("conformance/tests/auth/test_keys_and_scopes.py::test_x ak_local") == (
        "conformance/tests/auth/test_keys_and_scopes.py::test_x ***"
    )
    assert mask_argv(["--api-key", WRITE_KEY, "--expiry-api-key=k2", "--scoped-key", "k=p/",
                      "--rules", "X"]) == [
        "--api-key", "***", "--expiry-api-key=***", "--scoped-key", "***=p/", "--rules", "X"]


def test_runner_hands_keys_to_the_suite_in_its_environment_only(tmp_path: Path) -> None:
    target = Target("http://h", WRITE_KEY, READ_KEY, f"{SCOPED_KEY}=s/", "r/", "http://e")
    options = {"--scoped-read-prefix", "--expiry-target"}
    argv = pytest_command("http://proxy", target, options, tmp_path / "j.xml", "READ-4",
                          "http://eproxy")
    assert not _leaks(" ".join(argv))
    env = suite_env(target)
    assert (env["O41_ARTIFACTS_API_KEY"], env["O41_CONFORMANCE_READ_KEY"],
            env["O41_CONFORMANCE_SCOPED_KEY"]) == (WRITE_KEY, READ_KEY, f"{SCOPED_KEY}=s/")


def _cmdlines() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                             .decode(errors="replace"))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not (HAS_EMULATOR and Path("/proc/self/cmdline").exists()),
                    reason="needs o41-emulator and /proc")
def test_no_key_in_ps_while_the_table_runs_a_suite(broken_target: str) -> None:
    """While the runner's suite runs against the target, no process shows a key: not the
    suite's pytest (keys in its environment), not the emulator (keys in its config file)."""
    target = Target(broken_target, WRITE_KEY, READ_KEY, f"{SCOPED_KEY}=scoped/")
    seen: list[str] = []
    result: list[tuple[int, str, str]] = []
    runner = threading.Thread(target=lambda: result.append(
        _run_suite((broken_target, None), target, {"--scoped-read-prefix"}, "AUTH-1", 120)))
    runner.start()
    while runner.is_alive():
        seen += [c for c in _cmdlines() if "conformance" in c or "o41-emulator" in c]
        time.sleep(0.05)  # sampling ps, not timing anything
    runner.join()
    code, first, tail = result[0]
    assert code == 1, tail  # the suite did run: no-key-check fails AUTH-1
    assert any("--target" in c for c in seen), "the suite's process was seen"
    assert not [c for c in seen if _leaks(c)]
