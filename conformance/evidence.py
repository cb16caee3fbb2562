"""No PASS without evidence: the statuses of clauses, rules and capability groups.

A test that skipped proved nothing, so a clause is PASS only when a test of it ran and
passed; a clause whose tests all skipped is NOT TESTED, with the option that would run them
(named in the skip reason, else in the description of the capability the test needs). A
rule is PASS only when every one of its clauses is; a capability group (``base``, or an
optional one) only when every clause its tests check is. So a target whose URL tests skip
cannot earn "base: PASS" by passing the others.

Statuses: ``FAIL`` (a test failed), ``ERROR`` (a test broke outside any rule), ``PASS``,
``NOT TESTED`` (only skips), ``SKIP`` (an optional capability the target does not offer:
every one of its tests skipped) and ``----`` (nothing selected checks it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["NOT_TESTED", "clause_status", "group_status", "hint_of", "rule_status"]

NOT_TESTED = "NOT TESTED"

# "--expiry-target URL", "--scoped-key KEY=PREFIX", "--max-url-wait": an option, and its
# metavar when the reason spells one.
_OPTION = re.compile(r"--[a-z][a-z0-9-]*(?: [A-Z][A-Z0-9_=./-]*\b)?")


def hint_of(reason: str, needs: Iterable[str] = ()) -> str:
    """What would run a skipped test: the options its skip reason names, else those in
    what its capabilities need, else the reason itself."""
    found = _OPTION.findall(reason)
    if not found:
        for need in needs:
            found += _OPTION.findall(need)
    return ", ".join(dict.fromkeys(found)) or reason


def clause_status(counts: dict[str, Any]) -> str:
    if counts["failed"]:
        return "FAIL"
    if counts["passed"]:
        return "PASS"
    return NOT_TESTED if counts["skipped"] else "----"


def rule_status(counts: dict[str, Any], clauses: list[dict[str, Any]]) -> str:
    """A rule's status from its own counts and the rows of its contract clauses."""
    if counts["failed"] or any(c["failed"] for c in clauses):
        return "FAIL"
    if not (counts["passed"] or counts["skipped"]):
        return "----"
    if any(clause_status(c) != "PASS" for c in clauses):
        return NOT_TESTED
    return "PASS" if counts["passed"] or clauses else NOT_TESTED


def group_status(counts: dict[str, Any], untested: list[str], base: bool) -> str:
    """A capability group's status; ``untested`` are the clauses its tests check that no
    test passed."""
    if counts["failed"]:
        return "FAIL"
    if counts.get("error"):
        return "ERROR"
    if not counts["passed"]:
        if not counts["skipped"]:
            return "----"
        # An optional capability every test of which skipped: the target does not offer it.
        return NOT_TESTED if base else "SKIP"
    return NOT_TESTED if untested else "PASS"
