"""Results by rule id: the terminal table, the failure details and the JSON report.

A test counts for the rules in its ``rule`` marker. A failure is charged to the rules its
exception names (every check raises a RuleViolation); only an exception that names no rule
(a crash, a malformed response) is charged to all the test's marked rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.rules import RULES, rules_of

__all__ = ["Collector", "TestResult"]


@dataclass
class TestResult:
    """One conformance test's outcome, merged over setup, call and teardown."""

    nodeid: str
    rules: list[str]
    outcome: str = "passed"
    failed_rules: list[str] = field(default_factory=list)
    message: str = ""
    steps: list[str] = field(default_factory=list)
    duration: float = 0.0


_QUIET = re.compile(r"state\.\w+\(\)")


def _notes(exc: BaseException | None) -> list[str]:
    """Notes attached to an exception (hypothesis' falsifying steps, scenario steps), without
    hypothesis' argument-less calls (invariants, teardown): the steps are the rules."""
    lines: list[str] = []
    if exc is None:
        return lines
    for note in getattr(exc, "__notes__", []) or []:
        lines.extend(ln for ln in str(note).splitlines() if not _QUIET.fullmatch(ln.strip()))
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            lines.extend(_notes(sub))
    return lines


class Collector:
    """Accumulates results during the session; renders the table and the JSON report."""

    def __init__(self) -> None:
        self.results: dict[str, TestResult] = {}

    def record(
        self,
        nodeid: str,
        rules: list[str],
        when: str,
        outcome: str,
        *,
        exc: BaseException | None = None,
        message: str = "",
        trail: list[str] | None = None,
        duration: float = 0.0,
    ) -> None:
        """Merge one phase's report (pytest calls this for setup, call and teardown)."""
        res = self.results.setdefault(nodeid, TestResult(nodeid, list(rules)))
        res.duration += duration
        if outcome == "skipped" and res.outcome == "passed":
            res.outcome, res.message = "skipped", message
        elif outcome == "failed":
            named = rules_of(exc)
            if not named and when != "call":
                res.outcome, res.message = "error", f"{when}: {message}"
                res.steps = list(trail or [])
                return
            res.outcome = "failed"
            res.failed_rules = named or list(rules)
            res.message = message if when == "call" else f"{when}: {message}"
            res.steps = _notes(exc) or list(trail or [])

    def by_rule(self) -> dict[str, dict[str, int]]:
        """passed / failed / skipped counts per rule id (every rule listed)."""
        table = {rule: {"passed": 0, "failed": 0, "skipped": 0} for rule in RULES}
        for res in self.results.values():
            for rule in res.rules:
                counts = table.setdefault(rule, {"passed": 0, "failed": 0, "skipped": 0})
                if res.outcome == "failed":
                    if rule in res.failed_rules:
                        counts["failed"] += 1
                elif res.outcome == "error":
                    continue
                else:
                    counts[res.outcome] += 1
            if res.outcome == "failed":
                for rule in res.failed_rules:
                    if rule not in res.rules:
                        table.setdefault(rule, {"passed": 0, "failed": 0, "skipped": 0})
                        table[rule]["failed"] += 1
        return table

    def failures(self) -> list[TestResult]:
        return [r for r in self.results.values() if r.outcome == "failed"]

    def errors(self) -> list[TestResult]:
        """Tests that broke outside any rule (e.g. the target could not be started)."""
        return [r for r in self.results.values() if r.outcome == "error"]

    @staticmethod
    def status(counts: dict[str, int]) -> str:
        if counts["failed"]:
            return "FAIL"
        return "PASS" if counts["passed"] else ("SKIP" if counts["skipped"] else "----")

    def lines(self) -> list[str]:
        """The terminal summary: the table by rule id, then each failure with its steps."""
        out = [f"{'rule':<9}{'passed':>7}{'failed':>7}{'skipped':>8}  status"]
        for rule, c in self.by_rule().items():
            out.append(
                f"{rule:<9}{c['passed']:>7}{c['failed']:>7}{c['skipped']:>8}  {self.status(c)}"
            )
        for res in self.failures():
            out.append("")
            for rule in res.failed_rules:
                out.append(f"FAILED {rule}: {RULES.get(rule, '(not a contract rule)')}")
            out.append(f"  test: {res.nodeid}")
            out.append(f"  why:  {res.message.splitlines()[0] if res.message else ''}")
            if res.steps:
                out.append("  steps:")
                out.extend(f"    {s}" for s in res.steps)
        for res in self.errors():
            out.append("")
            out.append(f"ERROR (no rule): {res.nodeid}")
            out.append(f"  why:  {res.message.splitlines()[0] if res.message else ''}")
        return out

    def to_json(self, meta: dict[str, Any]) -> dict[str, Any]:
        by_rule = self.by_rule()
        totals = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
        for res in self.results.values():
            totals[res.outcome] += 1
        return {
            **meta,
            "summary": totals,
            "rules": {
                rule: {"text": RULES.get(rule, ""), **c, "status": self.status(c).lower()}
                for rule, c in by_rule.items()
            },
            "failures": [
                {
                    "test": r.nodeid,
                    "rules": r.failed_rules,
                    "texts": {rule: RULES.get(rule, "") for rule in r.failed_rules},
                    "message": r.message,
                    "steps": r.steps,
                }
                for r in self.failures()
            ],
            "errors": [{"test": r.nodeid, "message": r.message} for r in self.errors()],
            "tests": [asdict(r) for r in sorted(self.results.values(), key=lambda r: r.nodeid)],
        }

    def write_json(self, path: Path, meta: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(meta), indent=2, sort_keys=False) + "\n")
