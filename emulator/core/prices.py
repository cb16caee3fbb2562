"""The published price table (USD per GB, GB = 10^9 bytes) and how a transfer is priced.

A read leaves the location's cloud; a write leaves the box's cloud. Local transfers are free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .locations import CROSS_CLOUD, INTER_REGION

GB = 10**9


def _default_inter_region() -> dict[str, float]:
    return {"aws": 0.02, "gcp": 0.02, "azure": 0.02}


def _default_cross_cloud() -> dict[str, float]:
    return {"aws": 0.09, "gcp": 0.12, "azure": 0.087, "other": 0.09}


@dataclass(frozen=True)
class Prices:
    inter_region: dict[str, float] = field(default_factory=_default_inter_region)
    cross_cloud: dict[str, float] = field(default_factory=_default_cross_cloud)

    def per_gb(self, route: str, leaving_cloud: str | None) -> float:
        """Price per GB of bytes leaving `leaving_cloud` by `route` (None: unknown cloud)."""
        if route == INTER_REGION:
            return self.inter_region.get(leaving_cloud or "", self.inter_region.get("other", 0.02))
        if route == CROSS_CLOUD:
            return self.cross_cloud.get(leaving_cloud or "other", self.cross_cloud["other"])
        return 0.0

    def per_gb_of(
        self, direction: str, route: str, location_cloud: str, place_cloud: str | None
    ) -> float:
        """Price per GB of a transfer: a read leaves the location's cloud, a write the box's
        (None: a box of unknown cloud). The one place that says which cloud bytes leave."""
        leaving = location_cloud if direction == "read" else place_cloud
        return self.per_gb(route, leaving)

    def cost(
        self, nbytes: int, direction: str, route: str, location_cloud: str, place_cloud: str | None
    ) -> float:
        return nbytes / GB * self.per_gb_of(direction, route, location_cloud, place_cloud)

    def json(self) -> dict:
        return {"inter_region": dict(self.inter_region), "cross_cloud": dict(self.cross_cloud)}
