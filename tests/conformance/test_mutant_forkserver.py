"""The mutant table's fork server and test selection (conformance/mutants/forkserver.py,
selection.py): a forked run is the pytest run a fresh process would be, and a rule's run
leaves out only files with none of its tests. The table itself runs in CI (.ci/run)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.mutants.forkserver import ForkServers
from conformance.mutants.runner import main as table_main
from conformance.mutants.selection import Selection

TESTS = '''
import os, sys

def test_sees_its_environment_and_directory():
    assert os.environ["O41_FORKED"] == "yes" and "O41_NOT_PASSED" not in os.environ
    assert os.getcwd() == sys.path[0] == os.environ["O41_CWD"]

def test_fails():
    assert 1 == 2

def test_sleeps():
    import time
    time.sleep(float(os.environ.get("O41_SLEEP", "0")))
'''


@pytest.fixture(scope="module")
def servers() -> Iterator[ForkServers]:
    started = ForkServers(1, {**os.environ, "O41_NOT_PASSED": "1"})
    try:
        yield started
    finally:
        started.stop()


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "O41_NOT_PASSED"}
    return {**base, "O41_FORKED": "yes", "O41_CWD": str(tmp_path), **more}


def test_forked_run_has_the_environment_directory_and_exit_code_asked_for(
    servers: ForkServers, tmp_path: Path
) -> None:
    (tmp_path / "test_forked.py").write_text(TESTS)
    out = tmp_path / "out.txt"
    args = ["-p", "no:cacheprovider", "-p", "no:randomly", "test_forked.py"]
    code = servers.run(args, _env(tmp_path), str(tmp_path), out, 120)
    assert code == 1, out.read_text()
    assert "1 failed, 2 passed" in out.read_text()
    keep = servers.run([*args, "-k", "not fails"], _env(tmp_path), str(tmp_path), out, 120)
    assert keep == 0, out.read_text()
    assert sys.argv[0] != "pytest"  # the runner's own process was not touched


def test_forked_run_past_its_timeout_is_killed_and_the_server_goes_on(
    servers: ForkServers, tmp_path: Path
) -> None:
    (tmp_path / "test_forked.py").write_text(TESTS)
    out = tmp_path / "out.txt"
    args = ["-p", "no:cacheprovider", "test_forked.py", "-k", "sleeps"]
    assert servers.run(args, _env(tmp_path, O41_SLEEP="60"), str(tmp_path), out, 2) is None
    assert servers.run(args, _env(tmp_path), str(tmp_path), out, 120) == 0, out.read_text()


def test_rule_run_ignores_only_files_without_a_test_it_selects() -> None:
    rows = (("/s/test_a.py", ("FENCE-2.a",)), ("/s/test_b.py", ("OPEN-1",)),
            ("/s/test_b.py", ("FENCE-2",)), ("/s/test_c.py", ("OPEN-2.b", "READ-1")),
            ("/s/test_d.py", ()))
    selection = Selection(rows)
    # A clause id selects under its rule; a test without rule ids runs in every run.
    assert selection.ignored("FENCE-2") == ["/s/test_c.py"]
    assert selection.ignored("OPEN-2") == ["/s/test_a.py", "/s/test_b.py"]
    assert selection.ignored("READ-1,OPEN-1") == ["/s/test_a.py"]
    assert Selection(rows[:3]).ignored("VER-1") is None  # nothing to select: collect it all


def test_repeat_json_needs_repeated_mutants_among_the_chosen() -> None:
    # Checked before any emulator starts: CI's verdict comparison needs a non-empty repeat.
    with pytest.raises(SystemExit, match="--repeat-json needs --repeat"):
        table_main(["--spawn", "--only", "FENCE-", "--repeat", "READ-4", "--repeat-json",
                    "x.json"])
