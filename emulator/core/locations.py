"""Locations, routes and placement: where a checkpoint is stored and what a transfer crosses.

PLACE-1..3 decide a write's location from the writer's place; the route of any transfer is
derived from the location and the place alone, so it can be recomputed anywhere (XC-1).
"""

from __future__ import annotations

from dataclasses import dataclass

from .names import Place

LOCAL, INTER_REGION, CROSS_CLOUD = "local", "inter_region", "cross_cloud"
ROUTES = (LOCAL, INTER_REGION, CROSS_CLOUD)


@dataclass(frozen=True)
class Location:
    """A bucket at a place."""

    cloud: str
    region: str
    bucket: str
    default: bool = False

    @property
    def place(self) -> Place:
        return Place(self.cloud, self.region)

    @property
    def id(self) -> str:
        return f"{self.cloud}/{self.region}"

    def json(self) -> dict:
        return {"cloud": self.cloud, "region": self.region}


def route(location: Place, place: Place | None) -> str:
    """Route between a location and a place; an unknown place counts as cross-cloud."""
    if place is None or place.cloud != location.cloud:
        return CROSS_CLOUD
    if place.region != location.region:
        return INTER_REGION
    return LOCAL


@dataclass(frozen=True)
class Placement:
    location: Location
    route: str
    kind: str  # "local", "default" (PLACE-2) or "fallback" (PLACE-3)
    warning: str | None


class Geography:
    """The emulator's locations, each cloud's default location, and the fallback."""

    def __init__(self, locations: list[Location], fallback: str) -> None:
        if not locations:
            raise ValueError("at least one location is needed")
        self.locations = {loc.id: loc for loc in locations}
        if len(self.locations) != len(locations):
            raise ValueError("two locations share a cloud/region")
        if fallback not in self.locations:
            raise ValueError(f"fallback {fallback!r} is not a location")
        self.fallback = self.locations[fallback]
        self.defaults: dict[str, Location] = {}
        for loc in locations:
            # A cloud's first location is its default unless another one is marked default.
            current = self.defaults.get(loc.cloud)
            if current is None or (loc.default and not current.default):
                self.defaults[loc.cloud] = loc
            elif loc.default:
                raise ValueError(f"cloud {loc.cloud} has two default locations")

    def get(self, location_id: str) -> Location:
        return self.locations[location_id]

    def place_for(self, place: Place | None) -> Placement:
        """PLACE-1..3: the writer's own region, else its cloud's default, else the fallback."""
        if place is not None:
            own = self.locations.get(str(place))
            if own is not None:
                return Placement(own, LOCAL, "local", None)
            default = self.defaults.get(place.cloud)
            if default is not None:
                return Placement(
                    default,
                    INTER_REGION,
                    "default",
                    f"no location in {place}: checkpoints go to {place.cloud}'s default "
                    f"location {default.id}, billed as inter-region transfer",
                )
        fb = self.fallback
        rt = route(fb.place, place)
        billed = f"billed as {rt.replace('_', '-')} transfer"
        why = (f"no location in {place.cloud} (the box is at {place})" if place is not None
               else "the open gave no place")
        hint = "" if place is not None else "; give the box's place to write near it"
        return Placement(
            fb,
            rt,
            "fallback",
            f"{why}: checkpoints go to the fallback location {fb.id}, {billed}{hint}",
        )
