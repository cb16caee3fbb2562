"""The contract's rule ids with one-line texts, and the failure type that carries them.

Every check in the suite raises :class:`RuleViolation` naming the rule it enforces, so a
failure anywhere (example test, scenario step, state machine invariant) maps to a rule id
in the report without guessing. The texts are our own one-line summaries of
``CONTRACT.md``; the suite never reads the implementation's notion of the rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "RULES",
    "RuleViolation",
    "check",
    "check_equal",
    "rules_of",
    "unknown_rules",
]

RULES: dict[str, str] = {
    "AUTH-1": "Every /api/v1 call without a valid key gets 401 unauthenticated.",
    "AUTH-2": "An open with a key that cannot write gets 403 forbidden and changes nothing.",
    "AUTH-3": "Key scopes are artifact prefixes with read or write; every endpoint enforces them.",
    "OPEN-1": "resume=latest on an artifact without versions succeeds with resume_from null.",
    "OPEN-2": "resume=latest on an artifact with versions returns the latest, signed.",
    "OPEN-3": "A fresh open (resume null) is refused with 409 has_checkpoints once versions exist.",
    "FORK-1": "A fork needs an empty target (409 not_empty); missing source 404, malformed 400.",
    "FORK-2": "A fork returns the source version, records forked_from, leaves the source alone.",
    "FENCE-1": "Each successful open returns an epoch greater than every earlier one.",
    "FENCE-2": "Writes and commits with a token older than the newest open get 409 fenced.",
    "FENCE-3": "The open is atomic with its read: no older-epoch commit becomes visible after it.",
    "FENCE-4": "Refused or failed opens fence nobody; the newest holder keeps writing.",
    "VER-1": "Version names are step-NNNNNNNN and file names clean relative paths, else 400.",
    "VER-2": "Committed versions are immutable: committing an existing name gets 409.",
    "VER-3": "A new version's step must exceed the latest's: 409 not_after_latest.",
    "VER-4": "A commit needs every declared file uploaded exactly, else 409 incomplete.",
    "READ-1": "version=latest is the committed version with the highest step; unknown is 404.",
    "READ-2": "urls=1 gives URLs a plain GET downloads; the bytes match sha256.",
    "READ-3": "URLs honour Range; parallel ranged GETs reassemble the file exactly.",
    "READ-4": "URLs are signed: another path, a changed signature or an expired URL gets 403.",
    "PLACE-1": "A write from a place with a location there goes to it, route local.",
    "PLACE-2": "Cloud has locations in other regions only: its default, inter_region, warning.",
    "PLACE-3": "A cloud without locations or an unknown place: the fallback, cross_cloud, warning.",
    "PLACE-4": "A version's location never changes; nothing is copied between locations.",
    "XC-1": "cross_cloud is true exactly when reader and location clouds differ; route follows.",
    "USAGE-1": "Usage counts bytes written and served per route, priced by the table.",
}


class RuleViolation(AssertionError):
    """An observed response broke a contract rule.

    Subclasses AssertionError so pytest and hypothesis treat it as an ordinary test
    failure (and hypothesis shrinks it), while the report can still read ``rule``.
    """

    def __init__(self, rule: str, detail: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown rule id {rule!r}")
        self.rule = rule
        self.detail = detail
        super().__init__(f"[{rule}] {RULES[rule]} -- {detail}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.rule, self.detail))


def check(condition: object, rule: str, detail: str) -> None:
    """Raise a RuleViolation for ``rule`` unless ``condition`` holds."""
    if not condition:
        raise RuleViolation(rule, detail)


def check_equal(actual: object, expected: object, rule: str, what: str) -> None:
    """Compare one observed value with the model's prediction under ``rule``."""
    if actual != expected:
        raise RuleViolation(rule, f"{what}: expected {expected!r}, got {actual!r}")


def rules_of(exc: BaseException | None) -> list[str]:
    """Rule ids carried by an exception, looking inside exception groups and causes."""
    found: list[str] = []
    seen: set[int] = set()

    def walk(e: BaseException | None) -> None:
        if e is None or id(e) in seen:
            return
        seen.add(id(e))
        if isinstance(e, RuleViolation) and e.rule not in found:
            found.append(e.rule)
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        walk(e.__cause__)

    walk(exc)
    return found


def unknown_rules(ids: Iterable[str]) -> list[str]:
    """The ids in ``ids`` that the contract does not define (for marker validation)."""
    return [i for i in ids if i not in RULES]
