"""The conformance suite against the emulator: clean it passes, each fault it catches.

Runs ``pytest conformance --target spawn`` in subprocesses (the suite spawns the emulator
itself, as a user would) and reads the JSON report: the proof that the suite has teeth is
that every ``--fault`` makes it fail and name the rule the fault breaks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from conformance.rules import RULES
from tests.support.deadlines import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
EMULATOR = Path(sys.executable).with_name("o41-emulator")
#: Each emulator fault and the one rule it breaks.
FAULTS = {
    "no-fencing": "FENCE-2",
    "stale-latest": "READ-1",
    "fresh-overwrites": "OPEN-3",
    "fork-into-nonempty": "FORK-1",
    "open-not-atomic": "FENCE-3",
    "wrong-cross-cloud": "XC-1",
    "no-key-check": "AUTH-1",
    "range-ignored": "READ-3",
    "commit-without-files": "VER-4",
    "url-never-expires": "READ-4",
    "fallback-silent": "PLACE-3",
    "version-overwrite": "VER-2",
}

pytestmark = pytest.mark.skipif(
    not (EMULATOR.exists() or shutil.which("o41-emulator")),
    reason="o41-emulator is not installed (pip install -e .)",
)


def run_suite(tmp: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """``pytest conformance --target spawn ARGS``: exit code, JSON report, output tail."""
    report = tmp / "report.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "conformance",
        "--target",
        "spawn",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:schemathesis",
        "--conformance-report",
        str(report),
        *args,
    ]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("O41_ARTIFACTS_API_KEY", None)
    # The whole suite took over 300 s at load 20 (2 cores).
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD,
                          env=env)
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, data, (proc.stdout + proc.stderr)[-4000:]


def failed_rules(report: dict[str, Any]) -> set[str]:
    return {rule for failure in report.get("failures", []) for rule in failure["rules"]}


#: The suite runs the tests below need, by name: started together, two at a time.
RUNS: dict[str, tuple[str, ...]] = {
    "clean": ("--junitxml", "{tmp}/junit.xml", "--conformance-html", "{tmp}/report.html"),
    # The state machine alone, twice with the default seed and once with another: what
    # varies between runs is hypothesis' examples (a whole second suite run would add 80 s)
    "stateful": ("-m", "stateful"),
    "stateful-again": ("-m", "stateful"),
    "stateful-seed-7": ("-m", "stateful", "--conformance-seed", "7"),
    "stateful-no-fencing": (
        "--emulator-fault",
        "no-fencing",
        "-m",
        "stateful",
        "--conformance-shrink-seconds",
        "5",
    ),
    **{
        f"fault-{f}": ("--emulator-fault", f, "--rules", r, "-m", "not stateful")
        for f, r in FAULTS.items()
    },
}
Run = tuple[int, dict[str, Any], str, Path]


def _needed(item: pytest.Item) -> str | None:
    if item.name.startswith("test_suite_names_rule_when_emulator_faulty["):
        return f"fault-{item.callspec.params['fault']}"  # type: ignore[attr-defined]
    return {
        "test_suite_passes_against_clean_emulator": "clean",
        "test_default_profile_gives_identical_results_twice": "stateful-again",
        "test_seed_changes_state_machine_examples": "stateful-seed-7",
        "test_state_machine_shrinks_fencing_fault_to_named_rule": "stateful-no-fencing",
    }.get(item.name)


@pytest.fixture(scope="module")
def suite_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Run]]]:
    """Start every selected test's suite run at once (two at a time: a 2-core machine);
    each test then waits for its own, so the whole module takes about half the sum."""

    def run(name: str) -> Run:
        tmp = tmp_path_factory.mktemp(name)
        code, report, out = run_suite(tmp, *(a.format(tmp=tmp) for a in RUNS[name]))
        return code, report, out, tmp

    names = [n for n in map(_needed, request.session.items) if n]
    if {"stateful-again", "stateful-seed-7"} & set(names):
        names.append("stateful")  # both compare themselves with it
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {name: pool.submit(run, name) for name in dict.fromkeys(names)}


def test_suite_passes_against_clean_emulator(suite_runs: dict[str, Future[Run]]) -> None:
    code, report, out, tmp = suite_runs["clean"].result()
    assert code == 0, out
    assert report["summary"]["failed"] == 0 and report["summary"]["error"] == 0, out
    not_passed = [t for t in report["tests"] if t["outcome"] != "passed"]
    assert not_passed == []
    statuses = {rule: r["status"] for rule, r in report["rules"].items()}
    assert statuses == {rule: "pass" for rule in RULES}
    assert all(cap["available"] for cap in report["capabilities"].values())
    assert report["verdict"] == {group: "pass" for group in report["capability_results"]}
    assert {"base", "usage", "read_key", "scoped_key", "url_expiry"} <= set(report["verdict"])
    assert (report["profile"], report["seed"]) == ("ci", 41)
    junit = ET.parse(tmp / "junit.xml")
    props = [p.get("value") or "" for p in junit.iter("property") if p.get("name") == "rules"]
    assert any("FENCE-2" in v for v in props)
    suite = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert suite["o41_seed"] == "41" and suite["o41_profile"] == "ci"
    page = (tmp / "report.html").read_text()
    assert "base contract" in page and ">PASS<" in page
    assert "<script" not in page and "src=" not in page and "<link" not in page


def _outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in report["tests"]}


def _examples(report: dict[str, Any]) -> dict[str, int]:
    """The state machine's requests: equal when it ran the same examples. (Race tests send
    as many requests as the race takes, so only their outcome must repeat.)"""
    return {t["nodeid"]: t["requests"] for t in report["tests"] if "state_machine" in t["nodeid"]}


@pytest.mark.slow
def test_default_profile_gives_identical_results_twice(
    suite_runs: dict[str, Future[Run]],
) -> None:
    """Same target, default profile: the state machine's same outcomes and examples."""
    first, second = suite_runs["stateful"].result()[1], suite_runs["stateful-again"].result()[1]
    assert first["seed"] == second["seed"] == 41
    assert set(_outcomes(first).values()) == {"passed"}, suite_runs["stateful"].result()[2]
    assert _outcomes(first) == _outcomes(second)
    assert _examples(first) == _examples(second)
    assert _examples(first) and all(n > 100 for n in _examples(first).values())


@pytest.mark.slow
def test_seed_changes_state_machine_examples(suite_runs: dict[str, Future[Run]]) -> None:
    """--conformance-seed is what fixes the examples: another seed explores differently."""
    clean = suite_runs["stateful"].result()[1]
    _, other, out, _ = suite_runs["stateful-seed-7"].result()
    assert other["seed"] == 7 and set(_outcomes(other).values()) == {"passed"}, out
    ((node, sent),) = _examples(other).items()
    assert sent != _examples(clean)[node], (sent, _examples(clean))


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_suite_names_rule_when_emulator_faulty(
    fault: str, suite_runs: dict[str, Future[Run]]
) -> None:
    code, report, out, _ = suite_runs[f"fault-{fault}"].result()
    rule = FAULTS[fault]
    assert code == 1, out
    assert rule in failed_rules(report), (failed_rules(report), out)
    assert report["rules"][rule]["status"] == "fail"
    failure = next(f for f in report["failures"] if rule in f["rules"])
    assert failure["texts"][rule] == RULES[rule]
    assert failure["steps"], failure


@pytest.mark.slow
def test_state_machine_shrinks_fencing_fault_to_named_rule(
    suite_runs: dict[str, Future[Run]],
) -> None:
    code, report, out, _ = suite_runs["stateful-no-fencing"].result()
    assert code == 1, out
    (failure,) = report["failures"]
    assert failure["rules"] == ["FENCE-2"], failure
    assert any("state.launch(" in step for step in failure["steps"]), failure["steps"]


def test_plugin_inert_without_target(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "scenario or fresh",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" in proc.stdout and "passed" not in proc.stdout


def test_plugin_rejects_unknown_rule_ids(tmp_path: Path) -> None:
    code, _, out = run_suite(tmp_path, "--rules", "FENCE-9")
    assert code == 4 and "unknown rule ids" in out
