"""Results by rule, by clause and by capability: the terminal tables and the JSON report.

A test counts for the ids in its ``rule`` marker: rule ids (``FENCE-2``) or clause ids
(``FENCE-2.a``, whose rule is the part before the dot). A failure is charged to the ids its
exception names (every check raises a RuleViolation); only an exception that names no id
(a crash, a malformed response) is charged to all the test's marked ids. A test that never
reached the target (setup error, transport failure) is an error, charged to nothing.

Tests without a feature marker check the base contract; tests with one (``usage``,
``scoped_key``...) check an optional capability, so an implementer reads "base: PASS,
usage: not offered" rather than one verdict mixing both. A skip is no evidence: what is
PASS and what is NOT TESTED is :mod:`conformance.evidence`'s to say.

Every text recorded (messages, steps) goes through ``clean`` first: the plugin's masks the
run's keys and spells out control characters a target sent (:mod:`conformance.shown`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from conformance import rules as _rules
from conformance.client import TargetUnreachable
from conformance.env import FEATURES
from conformance.evidence import NOT_TESTED
from conformance.evidence import clause_status
from conformance.evidence import group_status
from conformance.evidence import hint_of
from conformance.evidence import rule_status
from conformance.rules import RULES
from conformance.rules import rules_of
from conformance.shown import safe

__all__ = ["BASE", "Collector", "TestResult", "clause_text", "rule_of", "unreachable"]

#: The capability group of tests that carry no feature marker.
BASE = "base"


def rule_of(ident: str) -> str:
    """``FENCE-2.a`` -> ``FENCE-2``; a rule id stays as it is."""
    return ident.split(".", 1)[0]


def clauses() -> dict[str, str]:
    """The contract's clause ids and texts, once clauses.py defines them."""
    return dict(getattr(_rules, "CLAUSES", {}) or {})


def clause_text(ident: str) -> str:
    return clauses().get(ident) or RULES.get(rule_of(ident), "(not a contract rule)")


def unreachable(exc: BaseException | None) -> TargetUnreachable | None:
    """The transport failure inside an exception (groups and causes included), if any."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, TargetUnreachable):
            return e
        if isinstance(e, BaseExceptionGroup):
            stack.extend(e.exceptions)
        stack.extend((e.__cause__, e.__context__))
    return None


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


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
    features: list[str] = field(default_factory=list)
    #: HTTP requests the test body sent: equal across runs that exercise the same things.
    requests: int = 0

    @property
    def group(self) -> list[str]:
        return self.features or [BASE]


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


def _zero() -> dict[str, int]:
    return {"passed": 0, "failed": 0, "skipped": 0}


class Collector:
    """Accumulates results during the session; renders the tables and the JSON report."""

    def __init__(self, clean: Callable[[str], str] = safe) -> None:
        self.results: dict[str, TestResult] = {}
        self.clean = clean

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
        features: list[str] | None = None,
        requests: int = 0,
    ) -> None:
        """Merge one phase's report (pytest calls this for setup, call and teardown)."""
        message = self.clean(message)
        trail = [self.clean(line) for line in trail] if trail is not None else None
        res = self.results.setdefault(
            nodeid, TestResult(nodeid, list(rules), features=list(features or []))
        )
        res.duration += duration
        res.requests += requests
        if outcome == "skipped" and res.outcome == "passed":
            res.outcome, res.message = "skipped", message
        elif outcome == "failed":
            named = rules_of(exc)
            lost = unreachable(exc)
            if not named and (lost is not None or when != "call"):
                res.outcome = "error"
                res.message = str(lost) if lost is not None else f"{when}: {message}"
                res.steps = list(trail or [])
                return
            res.outcome = "failed"
            res.failed_rules = named or list(rules)
            res.message = message if when == "call" else f"{when}: {message}"
            res.steps = [self.clean(n) for n in _notes(exc)] or list(trail or [])

    def _charged(self, res: TestResult, by: str) -> tuple[list[str], list[str]]:
        """The ids a result counts for and the ids it failed, as rules or as clauses."""
        if by == "rule":
            return _unique([rule_of(i) for i in res.rules]), _unique(
                [rule_of(i) for i in res.failed_rules]
            )
        marked = [i for i in res.rules if "." in i]
        failed: list[str] = []
        for ident in res.failed_rules:
            # A check that names only the rule fails every clause of it the test marks.
            failed += [ident] if "." in ident else [c for c in marked if rule_of(c) == ident]
        return marked, _unique(failed)

    def _table(self, keys: list[str], by: str) -> dict[str, dict[str, int]]:
        table = {k: _zero() for k in keys}
        for res in self.results.values():
            ids, failed = self._charged(res, by)
            if res.outcome == "error":
                continue
            for ident in ids:
                counts = table.setdefault(ident, _zero())
                if res.outcome != "failed":
                    counts[res.outcome] += 1
                elif ident in failed:
                    counts["failed"] += 1
            for ident in failed:
                if ident not in ids:
                    table.setdefault(ident, _zero())["failed"] += 1
        return table

    def by_rule(self) -> dict[str, dict[str, int]]:
        """passed / failed / skipped counts per rule id (every rule listed)."""
        return self._table(list(RULES), "rule")

    def by_clause(self) -> dict[str, dict[str, int]]:
        """The same per clause id: every clause of clauses.CLAUSES and every one a test marks."""
        return dict(sorted(self._table(list(clauses()), "clause").items(), key=_clause_order))

    def by_capability(self) -> dict[str, dict[str, Any]]:
        """Counts per capability group (``base`` first), with the first skip reason."""
        groups: dict[str, dict[str, Any]] = {BASE: {**_zero(), "error": 0, "reason": ""}}
        for res in self.results.values():
            for name in res.group:
                g = groups.setdefault(name, {**_zero(), "error": 0, "reason": ""})
                g[res.outcome] += 1
                if res.outcome == "skipped" and not g["reason"]:
                    g["reason"] = res.message
        return groups

    def hints(self) -> dict[str, str]:
        """Per clause id, what would run the tests of it that skipped (options, or why)."""
        found: dict[str, list[str]] = {}
        for res in self.results.values():
            if res.outcome != "skipped":
                continue
            hint = hint_of(res.message, [FEATURES.get(f, "") for f in res.features])
            for ident in self._charged(res, "clause")[0]:
                found.setdefault(ident, [])
                if hint and hint not in found[ident]:
                    found[ident].append(hint)
        return {ident: "; ".join(h) for ident, h in found.items()}

    def clause_rows(self) -> dict[str, dict[str, Any]]:
        """Per clause: counts, status and, when NOT TESTED, what would run it."""
        hints = self.hints()
        rows: dict[str, dict[str, Any]] = {}
        for ident, c in self.by_clause().items():
            status = clause_status(c)
            rows[ident] = {**c, "status": status}
            if status == NOT_TESTED:
                rows[ident]["run_with"] = hints.get(ident, "")
        return rows

    def rule_rows(self, clause_rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Per rule: counts and status (PASS only when every clause of it is PASS)."""
        rows: dict[str, dict[str, Any]] = {}
        for rule, c in self.by_rule().items():
            own = {i: r for i, r in clause_rows.items() if rule_of(i) == rule}
            status = rule_status(c, list(own.values()))
            rows[rule] = {**c, "status": status}
            if status == NOT_TESTED:
                rows[rule]["untested"] = [i for i, r in own.items() if r["status"] != "PASS"]
        return rows

    def group_rows(self, clause_rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Per capability group: counts, status and the clauses its tests left untested."""
        marked: dict[str, set[str]] = {}
        for res in self.results.values():
            if res.outcome != "error":
                for name in res.group:
                    marked.setdefault(name, set()).update(self._charged(res, "clause")[0])
        rows = {}
        for name, g in self.by_capability().items():
            untested = sorted(
                (i for i in marked.get(name, ()) if clause_rows.get(i, {}).get("status")
                 in (NOT_TESTED, "----")),
                key=lambda i: _clause_order((i, None)),
            )
            status = group_status(g, untested, name == BASE)
            rows[name] = {**g, "status": status, "untested": untested if untested else []}
        return rows

    def verdicts(self) -> dict[str, str]:
        return {name: g["status"] for name, g in self.group_rows(self.clause_rows()).items()}

    def failures(self) -> list[TestResult]:
        return [r for r in self.results.values() if r.outcome == "failed"]

    def errors(self) -> list[TestResult]:
        """Tests that broke outside any rule (target not started, transport failure)."""
        return [r for r in self.results.values() if r.outcome == "error"]

    @staticmethod
    def _rows(title: str, table: dict[str, dict[str, Any]], width: int) -> list[str]:
        out = [f"{title:<{width}}{'passed':>7}{'failed':>7}{'skipped':>8}  status"]
        for ident, c in table.items():
            why = f"  (run with {c['run_with']})" if c.get("run_with") else ""
            out.append(
                f"{ident:<{width}}{c['passed']:>7}{c['failed']:>7}{c['skipped']:>8}"
                f"  {c['status']}{why}"
            )
        return out

    def lines(self) -> list[str]:
        """The terminal summary: capabilities, rules, clauses, what was not tested and
        why, then each failure's steps."""
        clause_rows = self.clause_rows()
        out = ["capability        passed failed skipped  status"]
        for name, g in self.group_rows(clause_rows).items():
            why = ""
            if g["status"] == "SKIP" and g["reason"]:
                why = f"  ({g['reason']})"
            elif g["status"] == NOT_TESTED:
                why = f"  (not tested: {', '.join(g['untested'])})"
            out.append(
                f"{name:<17}{g['passed']:>7}{g['failed']:>7}{g['skipped']:>8}"
                f"  {g['status']}{why}"
            )
        out += ["", *self._rows("rule", self.rule_rows(clause_rows), 9)]
        # Printed once tests mark clause ids; until then it would be every clause at "----".
        if any("." in ident for res in self.results.values() for ident in res.rules):
            out += ["", *self._rows("clause", clause_rows, 12)]
        for ident, row in clause_rows.items():
            if row["status"] == NOT_TESTED:
                out += ["", f"NOT TESTED {ident}: {clause_text(ident)}",
                        f"  every test of it skipped; run with: {row['run_with']}"]
        for res in self.failures():
            out.append("")
            for ident in res.failed_rules:
                out.append(f"FAILED {ident}: {clause_text(ident)}")
            out.append(f"  test: {res.nodeid}")
            out.append(f"  why:  {res.message.splitlines()[0] if res.message else ''}")
            if res.steps:
                out.append("  steps:")
                out.extend(f"    {s}" for s in res.steps)
        for res in self.errors():
            out.append("")
            out.append(f"ERROR (no rule charged): {res.nodeid}")
            out.append(f"  why:  {res.message.splitlines()[0] if res.message else ''}")
        return out

    def to_json(self, meta: dict[str, Any]) -> dict[str, Any]:
        totals = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
        for res in self.results.values():
            totals[res.outcome] += 1
        clause_rows = self.clause_rows()
        groups = self.group_rows(clause_rows)

        def lower(row: dict[str, Any]) -> dict[str, Any]:
            return {**row, "status": row["status"].lower()}

        return {
            **meta,
            "summary": totals,
            "verdict": {name: g["status"].lower() for name, g in groups.items()},
            "capability_results": {name: lower(g) for name, g in groups.items()},
            "rules": {
                rule: {"text": RULES.get(rule, ""), **lower(row)}
                for rule, row in self.rule_rows(clause_rows).items()
            },
            "clauses": {
                ident: {"text": clause_text(ident), **lower(row)}
                for ident, row in clause_rows.items()
            },
            "failures": [
                {
                    "test": r.nodeid,
                    "rules": r.failed_rules,
                    "texts": {ident: clause_text(ident) for ident in r.failed_rules},
                    "message": r.message,
                    "steps": r.steps,
                }
                for r in self.failures()
            ],
            "errors": [{"test": r.nodeid, "message": r.message} for r in self.errors()],
            "tests": [asdict(r) for r in sorted(self.results.values(), key=lambda r: r.nodeid)],
        }

    def write_json(self, path: Path, data: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # ASCII with \u escapes: a lone surrogate a target sent still encodes.
        path.write_text(json.dumps(data, indent=2, ensure_ascii=True) + "\n", encoding="ascii")


def _clause_order(item: tuple[str, Any]) -> tuple[int, str]:
    """Clauses in the order of RULES (the contract's order), then by their suffix."""
    order = {rule: n for n, rule in enumerate(RULES)}
    return order.get(rule_of(item[0]), len(order)), item[0]
