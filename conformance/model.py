"""Our own model of the contract: places, routes, prices, artifacts, versions and fencing.

Plain Python with no HTTP, written from CONTRACT.md alone. Tests ask it what a correct
implementation must answer and compare; it never looks at how an implementation works.
Epoch numbers are the implementation's: the model only remembers the ones it was given
and checks that they increase (FENCE-1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from conformance.rules import check

__all__ = [
    "DEFAULT_PLACES",
    "ROUTES",
    "UNKNOWN_PLACE",
    "ArtifactModel",
    "FileSpec",
    "Model",
    "OpenOutcome",
    "Place",
    "Placement",
    "Topology",
    "VersionModel",
    "WriteOutcome",
    "parse_fork",
    "parse_step",
    "route_between",
    "valid_file_name",
    "version_name",
]

ROUTES = ("local", "inter_region", "cross_cloud")
DEFAULT_PLACES = "aws/us-east-1,gcp/europe-west4,azure/westeurope"
_STEP = re.compile(r"step-(\d{8})")
_FORK = re.compile(r"o41://([^/]+/[^/]+)/([^/]+)")
_OTHER_REGIONS = {
    "aws": ["us-west-2", "eu-west-1"],
    "gcp": ["us-central1", "europe-west1"],
    "azure": ["eastus", "westus2"],
}


@dataclass(frozen=True, order=True)
class Place:
    """Where a box runs or a location is: a lower-case cloud and a region."""

    cloud: str
    region: str

    @classmethod
    def parse(cls, text: str) -> Place:
        """Read ``cloud/region`` (cloud compared case-insensitively, as SkyPilot's)."""
        cloud, sep, region = text.strip().partition("/")
        if not sep or not cloud or not region:
            raise ValueError(f"a place is 'cloud/region', not {text!r}")
        return cls(cloud.lower(), region)

    @classmethod
    def from_json(cls, obj: Any) -> Place | None:
        """Read a ``{"cloud", "region"}`` object from a response (None stays None)."""
        if obj is None:
            return None
        return cls(str(obj["cloud"]).lower(), str(obj["region"]))

    def as_json(self) -> dict[str, str]:
        return {"cloud": self.cloud, "region": self.region}

    def __str__(self) -> str:
        return f"{self.cloud}/{self.region}"


#: A place in a cloud where no implementation has a location (PLACE-3).
UNKNOWN_PLACE = Place("lambda", "us-south-1")


def route_between(location: Place, place: Place | None) -> str | None:
    """The route of a transfer between a location and a place (None: nothing known)."""
    if place is None:
        return None
    if place.cloud != location.cloud:
        return "cross_cloud"
    return "local" if place.region == location.region else "inter_region"


@dataclass(frozen=True)
class Placement:
    """Where a box's checkpoints go: ``kind`` is local, default (PLACE-2) or fallback."""

    location: Place
    route: str
    kind: str


@dataclass(frozen=True)
class Topology:
    """The target's locations; the first one listed for a cloud is its default."""

    locations: tuple[Place, ...]
    fallback: Place

    @classmethod
    def parse(cls, places: str = DEFAULT_PLACES, fallback: str | None = None) -> Topology:
        locs = tuple(Place.parse(p) for p in places.split(",") if p.strip())
        if not locs:
            raise ValueError("--places needs at least one cloud/region")
        fb = Place.parse(fallback) if fallback else locs[0]
        if fb not in locs:
            raise ValueError(f"fallback {fb} is not one of the places {places}")
        return cls(locs, fb)

    @property
    def clouds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.cloud for p in self.locations))

    def default_for(self, cloud: str) -> Place | None:
        return next((p for p in self.locations if p.cloud == cloud), None)

    def other_region(self, cloud: str) -> Place:
        """A region of ``cloud`` without a location here (a PLACE-2 place)."""
        for region in [*_OTHER_REGIONS.get(cloud, []), f"{cloud}-conformance-1"]:
            if Place(cloud, region) not in self.locations:
                return Place(cloud, region)
        raise AssertionError("unreachable: the synthetic region is never a location")

    def placement(self, place: Place | None) -> Placement:
        """Where a write from ``place`` lands (PLACE-1/2/3); unknown places: fallback."""
        if place is not None and place in self.locations:
            return Placement(place, "local", "local")
        default = self.default_for(place.cloud) if place is not None else None
        if default is not None:
            return Placement(default, "inter_region", "default")
        return Placement(self.fallback, "cross_cloud", "fallback")


DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "inter_region": {"aws": 0.02, "gcp": 0.02, "azure": 0.02},
    "cross_cloud": {"aws": 0.09, "gcp": 0.12, "azure": 0.087, "other": 0.09},
}


def price_per_gb(
    prices: dict[str, dict[str, float]], direction: str, location: Place, place: Place | None
) -> float:
    """USD per GB (10^9 bytes): a read leaves the location's cloud, a write the box's."""
    route = route_between(location, place) or "cross_cloud"
    if route == "local":
        return 0.0
    if route == "inter_region":
        return float(prices["inter_region"].get(location.cloud, 0.0))
    leaving = location.cloud if direction == "read" else (place.cloud if place else "other")
    table = prices["cross_cloud"]
    return float(table.get(leaving, table.get("other", 0.0)))


def parse_step(name: str) -> int | None:
    """The step of a version name, or None when the name is not ``step-`` and 8 digits."""
    m = _STEP.fullmatch(name)
    return int(m.group(1)) if m else None


def version_name(step: int) -> str:
    return f"step-{step:08d}"


def valid_file_name(name: str) -> bool:
    """VER-1: a relative path without empty, ``.`` or ``..`` segments."""
    if not name or name.startswith("/") or "\\" in name:
        return False
    return all(seg not in ("", ".", "..") for seg in name.split("/"))


def parse_fork(resume: str) -> tuple[str, str] | None:
    """``o41://P/N/step-XXXXXXXX`` -> (``P/N``, version); None when malformed."""
    m = _FORK.fullmatch(resume)
    if not m or parse_step(m.group(2)) is None:
        return None
    return m.group(1), m.group(2)


@dataclass(frozen=True)
class FileSpec:
    name: str
    size: int
    sha256: str

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class VersionModel:
    """A committed version as the model remembers it."""

    artifact: str
    name: str
    location: Place
    files: tuple[FileSpec, ...]
    epoch: int
    holder: str
    #: The writing box's place: where usage ``placements`` count it (USAGE-1.e, VER-7.a).
    written_from: Place | None = None

    @property
    def step(self) -> int:
        step = parse_step(self.name)
        assert step is not None
        return step

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class ArtifactModel:
    name: str
    epoch: int
    holder: str
    versions: dict[str, VersionModel] = field(default_factory=dict)
    forked_from: tuple[str, str] | None = None
    #: Names deleted by VER-7: 404 from then on, and their steps are never reused.
    deleted: set[str] = field(default_factory=set)

    @property
    def latest(self) -> VersionModel | None:
        return max(self.versions.values(), key=lambda v: v.step, default=None)

    def names(self) -> list[str]:
        """Version names in step order (what ``/versions/list`` must return)."""
        return [v.name for v in sorted(self.versions.values(), key=lambda v: v.step)]


@dataclass(frozen=True)
class OpenOutcome:
    """What an open must answer: an error (status, code) or success with these fields."""

    status: int
    code: str | None
    rule: str
    resume_from: VersionModel | None = None
    fenced: tuple[int, str] | None = None
    placement: Placement | None = None
    forked_from: tuple[str, str] | None = None

    @property
    def ok(self) -> bool:
        return self.code is None


@dataclass(frozen=True)
class WriteOutcome:
    """What a write must answer. ``now`` must be reported by the write itself;
    ``later`` may be reported by the write or deferred to the commit (the contract allows
    both for version_exists and not_after_latest)."""

    now: tuple[int, str, str] | None = None
    later: tuple[int, str, str] | None = None


class Model:
    """All artifacts of one test run, as a correct implementation would keep them."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.artifacts: dict[str, ArtifactModel] = {}

    def predict_open(
        self,
        artifact: str,
        resume: str | None,
        place: Place | None,
        *,
        can_write: bool = True,
    ) -> OpenOutcome:
        """The outcome of ``POST /artifacts/open`` (OPEN-*, FORK-*, AUTH-2)."""
        target = self.artifacts.get(artifact)
        has_versions = bool(target and target.versions)
        resume_from: VersionModel | None = None
        forked_from: tuple[str, str] | None = None
        if resume not in (None, "latest"):
            fork = parse_fork(str(resume))
            if fork is None:
                return OpenOutcome(400, "invalid_argument", "FORK-1")
            if not can_write:
                return OpenOutcome(403, "forbidden", "AUTH-2")
            source = self.artifacts.get(fork[0])
            if source is None or fork[1] not in source.versions:
                return OpenOutcome(404, "not_found", "FORK-1")
            if has_versions:
                return OpenOutcome(409, "not_empty", "FORK-1")
            resume_from, forked_from = source.versions[fork[1]], fork
        elif not can_write:
            return OpenOutcome(403, "forbidden", "AUTH-2")
        elif resume is None and has_versions:
            return OpenOutcome(409, "has_checkpoints", "OPEN-3")
        elif resume == "latest" and target is not None:
            resume_from = target.latest
        if forked_from is not None:
            rule = "FORK-2"
        elif resume is None:
            rule = "OPEN-3"
        else:
            rule = "OPEN-2" if resume_from is not None else "OPEN-1"
        fenced = (target.epoch, target.holder) if target is not None else None
        return OpenOutcome(
            200, None, rule, resume_from, fenced, self.topology.placement(place), forked_from
        )

    def record_open(self, artifact: str, outcome: OpenOutcome, epoch: int, holder: str) -> None:
        """Remember a successful open; FENCE-1 fails if the epoch did not increase."""
        target = self.artifacts.get(artifact)
        if target is None:
            self.artifacts[artifact] = ArtifactModel(
                artifact, epoch, holder, forked_from=outcome.forked_from
            )
            return
        check(
            isinstance(epoch, int) and epoch > target.epoch,
            "FENCE-1",
            f"open of {artifact} returned epoch {epoch!r} after epoch {target.epoch}",
        )
        target.epoch, target.holder = epoch, holder
        if outcome.forked_from is not None:
            target.forked_from = outcome.forked_from

    def is_fenced(self, artifact: str, epoch: int) -> bool:
        return epoch < self.artifacts[artifact].epoch

    def predict_write(
        self, artifact: str, token_epoch: int, version: str, files: list[FileSpec]
    ) -> WriteOutcome:
        """The outcome of ``POST /versions/write`` (FENCE-2, VER-1/2/3): a malformed name
        is 400 before a fenced token's 409 (VER-6.f)."""
        if parse_step(version) is None or not all(valid_file_name(f.name) for f in files):
            return WriteOutcome(now=(400, "invalid_argument", "VER-1"))
        if self.is_fenced(artifact, token_epoch):
            return WriteOutcome(now=(409, "fenced", "FENCE-2"))
        return WriteOutcome(later=self._version_conflict(artifact, version))

    def predict_commit(
        self, artifact: str, token_epoch: int, upload_epoch: int, version: str
    ) -> tuple[int, str, str] | None:
        """The outcome of ``POST /versions/commit`` of a fully uploaded version."""
        if token_epoch != upload_epoch:
            return (409, "fenced", "FENCE-2")
        if self.is_fenced(artifact, upload_epoch):
            return (409, "fenced", "FENCE-3")
        return self._version_conflict(artifact, version)

    def _version_conflict(self, artifact: str, version: str) -> tuple[int, str, str] | None:
        target = self.artifacts[artifact]
        if version in target.versions:
            return (409, "version_exists", "VER-2")
        latest = target.latest
        step = parse_step(version)
        if latest is not None and step is not None and step <= latest.step:
            return (409, "not_after_latest", "VER-3")
        return None

    def record_commit(self, version: VersionModel) -> None:
        self.artifacts[version.artifact].versions[version.name] = version

    def predict_delete(
        self, artifact: str, token_epoch: int, version: str
    ) -> list[tuple[int, str, str]]:
        """The answers a ``POST /versions/delete`` may give (VER-7); empty: success. A 404
        comes before a 409 (VER-6.f); the latest with a fenced token is wrong in two 409 ways
        the contract does not order, so either is right."""
        target = self.artifacts[artifact]
        if parse_step(version) is None:
            return [(400, "invalid_argument", "VER-7.d")]
        if version not in target.versions:  # never committed, or deleted already
            return [(404, "not_found", "VER-7.d")]
        out = []
        if self.is_fenced(artifact, token_epoch):
            out.append((409, "fenced", "VER-7.d"))
        latest = target.latest
        if latest is not None and latest.name == version:
            out.append((409, "is_latest", "VER-7.d"))
        return out

    def record_delete(self, artifact: str, version: str) -> None:
        """The latest stays (it cannot be deleted), so VER-3 keeps comparing with it."""
        target = self.artifacts[artifact]
        del target.versions[version]
        target.deleted.add(version)
