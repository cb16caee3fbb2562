"""The checks of one reply every test shares: a success with a JSON object, the contract's
error shape, either one as expected, an open's or a write's placement.

Each check names the rule it enforces, so a failing step reports the broken rule id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.client import Reply
from conformance.model import Place
from conformance.model import Placement
from conformance.rules import RuleViolation
from conformance.rules import check
from conformance.rules import check_equal

__all__ = [
    "expect_error", "expect_ok", "expect_open_placed", "expect_outcome", "expect_write_placed",
]


def expect_ok(reply: Reply, rule: str, what: str) -> dict[str, Any]:
    """A 2xx with a JSON object body, else a violation of ``rule``."""
    check(reply.ok, rule, f"{what}: expected success, got {reply.brief()}")
    check(isinstance(reply.body, dict), rule, f"{what}: the body is not a JSON object")
    return reply.body


def expect_error(reply: Reply, status: int, code: str, rule: str, what: str) -> None:
    """The contract's error shape with this status and code, else a violation of ``rule``."""
    if reply.status != status or reply.code != code:
        raise RuleViolation(rule, f"{what}: expected {status} {code}, got {reply.brief()}")
    message = reply.body["error"].get("message")
    check(isinstance(message, str) and message, rule, f"{what}: error without a message")


def expect_outcome(
    reply: Reply, expected: tuple[int, str, str] | None, ok_rule: str, what: str
) -> dict[str, Any] | None:
    """Success (checked under ``ok_rule``) or the expected (status, code, rule) error."""
    if expected is None:
        return expect_ok(reply, ok_rule, what)
    expect_error(reply, expected[0], expected[1], expected[2], what)
    return None


def expect_open_placed(body: Mapping[str, Any], want: Placement, fallback: Place, rule: str,
                       warned: str, what: str) -> None:
    """An open's answer (``what``): writes go to ``want``'s location and route (``rule``); a
    default placement is warned about, a fallback one by a warning naming ``fallback``
    (``warned``)."""
    wl = body.get("write_location") or {}
    check_equal((Place.from_json(wl) if wl else None, wl.get("route")),
                (want.location, want.route), rule, f"write_location of {what}")
    warnings = [str(w) for w in body.get("warnings") or []]
    if want.kind == "default":
        check(warnings, warned, f"no warning for {what}")
    elif want.kind == "fallback":
        check(any(fallback.cloud in w and fallback.region in w for w in warnings), warned,
              f"{what}: no warning naming the fallback {fallback}: {warnings}")


def expect_write_placed(
    reply: Reply, want: Placement, rule: str, what: str, placed_what: str
) -> dict[str, Any]:
    """A write's answer: a success (``what``) whose location and route are ``want``'s
    (``placed_what``); its body."""
    body = expect_ok(reply, rule, what)
    check_equal((Place.from_json(body.get("location")), body.get("route")),
                (want.location, want.route), rule, placed_what)
    return body
