"""The contract's rule and clause ids with one-line texts, and the failure type carrying them.

Every check in the suite raises :class:`RuleViolation` naming the clause (or, for broad
checks, the rule) it enforces, so a failure anywhere (example test, scenario step, state
machine invariant) maps to a clause and its rule in the report without guessing. A clause
id is its rule id with a letter (``FENCE-2.b``); :func:`rule_of` gives the rule of either.
The texts are our own summaries of docs/contract.md; the suite never reads the
implementation's notion of the rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.clauses import CLAUSES
from conformance.clauses import RULES

__all__ = [
    "CLAUSES",
    "RULES",
    "RuleViolation",
    "check",
    "check_equal",
    "clauses_of",
    "clauses_of_rule",
    "is_known",
    "rule_of",
    "rules_of",
    "text_of",
    "unknown_rules",
]

def rule_of(rule_or_clause: str) -> str:
    """The rule id of a rule or clause id (``FENCE-2.b`` -> ``FENCE-2``)."""
    return rule_or_clause.split(".", 1)[0]


def is_known(rule_or_clause: str) -> bool:
    """Whether the contract defines this rule or clause id."""
    return rule_or_clause in RULES or rule_or_clause in CLAUSES


def text_of(rule_or_clause: str) -> str:
    """The one-line text of a rule or clause id."""
    return CLAUSES.get(rule_or_clause) or RULES[rule_of(rule_or_clause)]


def clauses_of_rule(rule: str) -> list[str]:
    """The clause ids of one rule, in contract order."""
    return [c for c in CLAUSES if rule_of(c) == rule]


class RuleViolation(AssertionError):
    """An observed response broke a contract clause (or, for a broad check, a rule).

    Subclasses AssertionError so pytest and hypothesis treat it as an ordinary test
    failure (and hypothesis shrinks it), while the report can still read ``rule`` (always
    a rule id) and ``clause`` (the clause id, or None when only the rule was named).
    """

    def __init__(self, rule: str, detail: str) -> None:
        if not is_known(rule):
            raise ValueError(f"unknown rule or clause id {rule!r}")
        self.id = rule
        self.rule = rule_of(rule)
        self.clause = rule if rule in CLAUSES else None
        self.detail = detail
        super().__init__(f"[{rule}] {text_of(rule)} -- {detail}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.id, self.detail))


def check(condition: object, rule: str, detail: str) -> None:
    """Raise a RuleViolation for ``rule`` (a rule or clause id) unless ``condition`` holds."""
    if not condition:
        raise RuleViolation(rule, detail)


def check_equal(actual: object, expected: object, rule: str, what: str) -> None:
    """Compare one observed value with the model's prediction under ``rule`` (or clause)."""
    if actual != expected:
        raise RuleViolation(rule, f"{what}: expected {expected!r}, got {actual!r}")


def _violations(exc: BaseException | None) -> list[RuleViolation]:
    """Every RuleViolation inside an exception, its exception groups and causes."""
    found: list[RuleViolation] = []
    seen: set[int] = set()

    def walk(e: BaseException | None) -> None:
        if e is None or id(e) in seen:
            return
        seen.add(id(e))
        if isinstance(e, RuleViolation):
            found.append(e)
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        walk(e.__cause__)

    walk(exc)
    return found


def rules_of(exc: BaseException | None) -> list[str]:
    """Rule ids carried by an exception, looking inside exception groups and causes."""
    return list(dict.fromkeys(v.rule for v in _violations(exc)))


def clauses_of(exc: BaseException | None) -> list[str]:
    """Clause ids carried by an exception (a violation naming only a rule gives the rule)."""
    return list(dict.fromkeys(v.id for v in _violations(exc)))


def unknown_rules(ids: Iterable[str]) -> list[str]:
    """The ids in ``ids`` that are neither a rule nor a clause (for marker validation)."""
    return [i for i in ids if not is_known(i)]
