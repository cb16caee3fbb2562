"""Which contract rule a scenario step's expectation is charged to, when the step names none.

A step's own ``rule`` always wins; otherwise the route, the warning kind or the expected error
code decides, then the action.
"""

from __future__ import annotations

from conformance.scenarios import Step

__all__ = ["OK_RULE", "ROUTE_RULE", "WARNING_RULE", "error_rule"]

ROUTE_RULE = {"local": "PLACE-1.a", "inter_region": "PLACE-2.a", "cross_cloud": "PLACE-3.a"}
WARNING_RULE = {"none": "PLACE-1.a", "default": "PLACE-2.b", "fallback": "PLACE-3.b"}
CODE_RULE = {
    "has_checkpoints": "OPEN-3.a",
    "not_empty": "FORK-1.a",
    "fenced": "FENCE-2.b",
    "version_exists": "VER-2.a",
    "not_after_latest": "VER-3.a",
    "incomplete": "VER-4.a",
    "forbidden": "AUTH-2.a",
    "unauthenticated": "AUTH-1.a",
    "payload_too_large": "VER-4.e",
    "is_latest": "VER-7.d",
}
OK_RULE = {
    "open": "OPEN-1.a",
    "race_open": "FENCE-1.a",
    "checkpoint": "VER-4.a",
    "upload": "VER-4.a",
    "commit": "VER-4.a",
    "read": "READ-1.a",
    "list": "READ-1.a",
    "artifact": "READ-1.a",
}


def error_rule(step: Step, code: str) -> str:
    """The rule an expected error ``code`` of ``step`` checks."""
    if step.rule:
        return step.rule
    if (code, step.action) == ("fenced", "upload"):
        return "FENCE-2.a"
    if code in CODE_RULE:
        return CODE_RULE[code]
    return {"open": "FORK-1.b", "read": "READ-1.b"}.get(step.action, "VER-1.a")
