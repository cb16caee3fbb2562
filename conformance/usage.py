"""Our model of usage (USAGE-1): bytes per route and what they cost.

Reads are exact: the suite counts every byte it was served. Writes are bounded: whether an
implementation counts the bytes of an upload that was never committed (a zombie's) is not
pinned by the contract, so the model keeps a lower bound (committed uploads) and an upper
bound (every byte PUT) and accepts anything in between.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from conformance.model import DEFAULT_PRICES
from conformance.model import ROUTES
from conformance.model import Place
from conformance.model import price_per_gb
from conformance.model import route_between
from conformance.rules import RuleViolation
from conformance.rules import check

__all__ = ["Charge", "UsageModel", "close"]


def close(a: float, b: float) -> bool:
    """Dollar amounts agree up to rounding to a micro-dollar."""
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=2e-6)


@dataclass
class Charge:
    """One transfer the suite made: its route, bytes and price; writes settle on commit."""

    direction: str
    route: str
    nbytes: int
    cost: float
    settled: bool


@dataclass
class UsageModel:
    prices: dict[str, dict[str, float]] = field(default_factory=lambda: DEFAULT_PRICES)
    charges: dict[str, list[Charge]] = field(default_factory=dict)

    def _charge(
        self, artifact: str, direction: str, location: Place, place: Place | None, nbytes: int
    ) -> Charge:
        route = route_between(location, place) or "cross_cloud"
        cost = nbytes / 1e9 * price_per_gb(self.prices, direction, location, place)
        charge = Charge(direction, route, nbytes, cost, settled=direction == "read")
        self.charges.setdefault(artifact, []).append(charge)
        return charge

    def put(self, artifact: str, location: Place, place: Place | None, nbytes: int) -> Charge:
        """Bytes PUT for an upload; call :meth:`Charge` ``settled = True`` when committed."""
        return self._charge(artifact, "write", location, place, nbytes)

    def grow(self, charge: Charge, location: Place, place: Place | None, nbytes: int) -> None:
        """More bytes PUT into the same upload (a write that joins it, VER-5): they are
        written from the same place to the same location, and settle with the upload."""
        charge.nbytes += nbytes
        charge.cost += nbytes / 1e9 * price_per_gb(self.prices, "write", location, place)

    def read(self, artifact: str, location: Place, place: Place | None, nbytes: int) -> None:
        self._charge(artifact, "read", location, place, nbytes)

    def bounds(self, artifact: str) -> dict[str, dict[str, float]]:
        out = {
            r: {"write_lo": 0, "write_hi": 0, "read": 0, "cost_lo": 0.0, "cost_hi": 0.0}
            for r in ROUTES
        }
        for c in self.charges.get(artifact, []):
            row = out[c.route]
            if c.direction == "read":
                row["read"] += c.nbytes
            else:
                row["write_hi"] += c.nbytes
                row["write_lo"] += c.nbytes if c.settled else 0
            row["cost_hi"] += c.cost
            row["cost_lo"] += c.cost if c.settled else 0.0
        return out

    def check_settled(
        self, artifact: str, fetch: Callable[[], dict[str, Any]], within: float = 3.0
    ) -> dict[str, Any]:
        """:meth:`check` a usage answer, re-reading it for up to ``within`` seconds while it
        disagrees: an implementation may meter a download only after the last byte left,
        which can be after the client has it all. Returns the last answer."""
        deadline = time.monotonic() + within
        while True:
            usage = fetch()
            try:
                self.check(artifact, usage)
                return usage
            except RuleViolation:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(0.05)

    def check(self, artifact: str, usage: dict[str, Any]) -> None:
        """Compare ``GET /usage/read?artifact=`` with the model (USAGE-1)."""
        routes = usage.get("routes") or {}
        total = 0.0
        for route, want in self.bounds(artifact).items():
            got = routes.get(route) or {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0}
            wb, rb, cost = got["write_bytes"], got["read_bytes"], float(got["cost_usd"])
            total += cost
            check(
                want["write_lo"] <= wb <= want["write_hi"],
                "USAGE-1",
                f"{artifact} {route} write_bytes {wb}, expected "
                f"{want['write_lo']}..{want['write_hi']}",
            )
            check(
                rb == want["read"],
                "USAGE-1",
                f"{artifact} {route} read_bytes {rb}, expected {want['read']}",
            )
            lo, hi = want["cost_lo"], want["cost_hi"]
            check(
                close(cost, lo) or close(cost, hi) or lo <= cost <= hi,
                "USAGE-1",
                f"{artifact} {route} cost_usd {cost}, expected {lo}..{hi}",
            )
        check(
            close(float(usage.get("total_cost_usd", -1)), total),
            "USAGE-1",
            f"total_cost_usd {usage.get('total_cost_usd')} is not the sum of routes {total}",
        )
