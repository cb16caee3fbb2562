"""No PASS without evidence: a clause whose tests only skipped is NOT TESTED, with the option
that would run them; its rule is not PASS; a base clause NOT TESTED makes the base verdict
NOT TESTED, and a run whose base is NOT TESTED says so, naming the options, and exits 0 as no
test failed (a CI job fails on a failure, not on a missing key)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conformance import rules
from conformance.evidence import hint_of
from conformance.html_report import render_html
from conformance.report import Collector
from conformance.rules import RuleViolation
from tests.support.fake_targets import run_suite

CLAUSES = {
    "READ-4.a": "Another file's path gets 403.",
    "READ-4.b": "A changed signature gets 403.",
    "READ-4.c": "An expired URL gets 403.",
    "OPEN-1.a": "resume=latest on a new artifact gives resume_from null.",
}


@pytest.fixture(autouse=True)
def with_clauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "CLAUSES", CLAUSES, raising=False)


def _unsigned_target_run() -> Collector:
    """The issue's run: READ-4's base tests skip (no query string), the rest pass."""
    c = Collector()
    c.record("t::path", ["READ-4.a"], "call", "passed")
    c.record("t::sig", ["READ-4.b"], "call", "skipped",
             message="the URL carries no signature to change (pass --signed-urls-only)")
    c.record("t::exp", ["READ-4.c"], "call", "skipped",
             message="URLs live 3600 s", features=["url_expiry"])
    c.record("t::open", ["OPEN-1.a"], "call", "passed")
    return c


def test_clause_with_only_skipped_tests_is_not_tested_with_the_option() -> None:
    data = _unsigned_target_run().to_json({})
    assert data["clauses"]["READ-4.a"]["status"] == "pass"
    assert data["clauses"]["READ-4.b"]["status"] == "not tested"
    assert data["clauses"]["READ-4.b"]["run_with"] == "--signed-urls-only"
    # No option in the reason: the capability's own description names it.
    assert data["clauses"]["READ-4.c"]["run_with"] == "--max-url-wait"


def test_rule_is_pass_only_when_every_clause_passed() -> None:
    data = _unsigned_target_run().to_json({})
    assert data["rules"]["READ-4"]["status"] == "not tested"
    assert data["rules"]["READ-4"]["untested"] == ["READ-4.b", "READ-4.c"]
    assert data["rules"]["OPEN-1"]["status"] == "pass"


def test_base_verdict_needs_every_base_clause_tested() -> None:
    c = _unsigned_target_run()
    data = c.to_json({})
    assert data["verdict"] == {"base": "not tested", "url_expiry": "skip"}
    assert data["capability_results"]["base"]["untested"] == ["READ-4.b"]
    lines = c.lines()
    assert any(ln.startswith("base") and "NOT TESTED  (not tested: READ-4.b)" in ln
               for ln in lines)
    assert "NOT TESTED READ-4.b: A changed signature gets 403." in lines
    assert "NOT TESTED" in render_html(data) and 'class="not-tested"' in render_html(data)


def test_a_clause_tested_by_another_test_is_tested() -> None:
    c = _unsigned_target_run()
    c.record("t::sig2", ["READ-4.b", "READ-4.c"], "call", "passed", features=["url_expiry"])
    data = c.to_json({})
    assert data["verdict"] == {"base": "pass", "url_expiry": "pass"}
    assert data["rules"]["READ-4"]["status"] == "pass"


def test_failure_beats_not_tested() -> None:
    c = _unsigned_target_run()
    c.record("t::sig3", ["READ-4.b"], "call", "failed", exc=RuleViolation("READ-4.b", "200"))
    assert c.to_json({})["verdict"]["base"] == "fail"


@pytest.mark.parametrize("reason, hint", [
    ("optional capability: needs a scoped key (pass --scoped-key KEY=PREFIX)",
     "--scoped-key KEY=PREFIX"),
    ("URLs live 3600s, over --max-url-wait 10; pass --expiry-target URL",
     "--max-url-wait, --expiry-target URL"),
    ("needs location aws/us-west-2", "needs location aws/us-west-2"),
])
def test_hint_is_the_option_in_the_skip_reason(reason: str, hint: str) -> None:
    assert hint_of(reason) == hint


_SKIPS_OPEN_1A = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if any("OPEN-1.a" in m.args for m in item.iter_markers("rule")):
            item.add_marker(pytest.mark.skip(reason="as a target without it: pass --opt-x V"))
"""


@pytest.mark.skipif(
    not (Path(sys.executable).with_name("o41-emulator").exists() or shutil.which("o41-emulator")),
    reason="o41-emulator not installed",
)
def test_run_whose_base_clause_only_skipped_is_not_tested_and_exits_0(tmp_path: Path) -> None:
    """Every test of OPEN-1.a skips (a plugin marks them, as a target could make them): no
    test fails: the base is NOT TESTED, the summary says what would test it, and the exit
    code is 0, no test having failed."""
    (tmp_path / "skips_open_1a.py").write_text(_SKIPS_OPEN_1A)
    report = tmp_path / "r.json"
    done = run_suite("--target", "spawn", "--rules", "OPEN-1", "-p", "skips_open_1a", "-q",
                     "--conformance-report", str(report), env={"PYTHONPATH": str(tmp_path)})
    out = done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["failed"] == 0 and data["summary"]["skipped"] > 0, out[-2000:]
    assert data["verdict"]["base"] == "not tested"
    assert data["clauses"]["OPEN-1.a"] | {"status": "not tested", "run_with": "--opt-x V"} == (
        data["clauses"]["OPEN-1.a"])
    assert done.returncode == 0 and data["exitstatus"] == 0
    strict = run_suite("--target", "spawn", "--rules", "OPEN-1", "-p", "skips_open_1a", "-q",
                       "--untested-fails", env={"PYTHONPATH": str(tmp_path)})
    assert strict.returncode == 1, (strict.stdout + strict.stderr)[-2000:]
    assert "--untested-fails: exit code 1" in strict.stdout
    assert "base NOT TESTED" in out and "run with: --opt-x V" in out
