"""Transient faults on demand, for testing a client's retries (like LocalStack's Chaos API).

Rules say which operation fails, how often, with what status, how much latency to add, and
whether a data-plane download is cut after N bytes. They live in the database so every
worker process applies the same rules at once; reading them is one primary-key lookup per
call, cheaper than any cache that could go stale between workers.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass

from .. import store
from ..core.errors import InvalidArgument
from ..store import Connection

OPERATIONS = (
    "*",
    "artifacts/open",
    "artifacts/read",
    "versions/write",
    "versions/commit",
    "versions/delete",
    "versions/read",
    "versions/list",
    "usage/read",
    "data/get",
    "data/put",
)


@dataclass(frozen=True)
class ChaosRule:
    operation: str = "*"
    probability: float = 1.0
    status: int = 503  # 0: no error, only latency or a cut body
    latency_ms: int = 0
    cut_after_bytes: int | None = None  # data/get only: the body stops after this many bytes
    times: int | None = None  # fire at most this many times (deterministic client tests)

    def matches(self, operation: str) -> bool:
        return self.operation in ("*", operation)


def parse_rules(raw: object) -> list[ChaosRule]:
    if not isinstance(raw, list):
        raise InvalidArgument("rules must be a list")
    rules = []
    for item in raw:
        if not isinstance(item, dict):
            raise InvalidArgument("each rule is an object")
        unknown = set(item) - set(ChaosRule.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(f"unknown rule fields: {', '.join(sorted(unknown))}")
        rule = ChaosRule(**item)
        if rule.operation not in OPERATIONS:
            raise InvalidArgument(f"operation must be one of {', '.join(OPERATIONS)}")
        if not isinstance(rule.probability, int | float) or not 0 <= rule.probability <= 1:
            raise InvalidArgument("probability must be between 0 and 1")
        if not isinstance(rule.status, int) or not (rule.status == 0 or 400 <= rule.status < 600):
            raise InvalidArgument("status must be 0 or an HTTP error status")
        if not isinstance(rule.latency_ms, int) or not 0 <= rule.latency_ms <= 60_000:
            raise InvalidArgument("latency_ms must be 0..60000")
        for name in ("cut_after_bytes", "times"):
            value = getattr(rule, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise InvalidArgument(f"{name} must be a non-negative integer")
        rules.append(rule)
    return rules


@dataclass(frozen=True)
class Effect:
    status: int = 0
    latency_ms: int = 0
    cut_after_bytes: int | None = None


class Chaos:
    """The chaos rules shared by every worker and every node, kept in the `meta` table."""

    def __init__(self) -> None:
        # (raw JSON, parsed rules) swapped as one object, so threads never see a torn pair.
        self._cache: tuple[str, list[ChaosRule]] = ("[]", [])

    def store(self, conn: Connection, rules: list[ChaosRule]) -> None:
        with store.transaction(conn):
            store.chaos.put(conn, json.dumps([asdict(r) for r in rules]))

    def rules(self, conn: Connection) -> list[ChaosRule]:
        raw = store.chaos.rules(conn) or "[]"
        cache = self._cache
        if raw != cache[0]:  # parse only when the rules changed
            cache = self._cache = (raw, [ChaosRule(**r) for r in json.loads(raw)])
        return cache[1]

    def effect(self, conn: Connection, operation: str) -> Effect | None:
        """What chaos does to this call, decided by each matching rule's coin."""
        for index, rule in enumerate(self.rules(conn)):
            if not rule.matches(operation) or random.random() >= rule.probability:
                continue
            if rule.times is not None and not self._spend(conn, index):
                continue
            return Effect(rule.status, rule.latency_ms, rule.cut_after_bytes)
        return None

    def _spend(self, conn: Connection, index: int) -> bool:
        """Use one of a counted rule's firings, in a transaction shared by every worker."""
        with store.transaction(conn):
            # Locked: two nodes spending the last firing at once must not both fire.
            raw = store.chaos.locked(conn)
            rules = json.loads(raw) if raw else []
            if index >= len(rules) or not rules[index].get("times"):
                return False
            rules[index]["times"] -= 1
            store.chaos.rewrite(conn, json.dumps(rules))
        return True
