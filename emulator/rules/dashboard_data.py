"""What the dashboard shows, read from the emulator's database: no Flask, no HTML.

The artifact view is a timeline of epochs (one per open, in order) holding the versions each
holder committed, so fencing reads left to right: a lane is fenced once a later open exists,
and uploads it never got to commit are shown where they were refused. The usage view reuses
the API's own usage report, so the page and `GET /usage/read` cannot disagree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .. import store
from ..core.keys import ANYONE
from ..core.locations import ROUTES
from ..state.backend import Backend
from .usage import read_usage


@dataclass
class VersionMark:
    """One committed checkpoint on the timeline."""

    version: str
    step: int
    location: str
    size: int
    epoch: int
    holder: str
    placement: str  # local, default (PLACE-2) or fallback (PLACE-3)
    created_at: str
    read_cross_cloud_by: list[str] = field(default_factory=list)  # places that paid egress
    forked_into: list[str] = field(default_factory=list)


@dataclass
class Attempt:
    """An upload never committed: `fenced` when a newer open exists, else still `uploading`."""

    version: str
    location: str
    state: str


@dataclass
class Lane:
    """One open of an artifact: its epoch, who held it from where, and what it wrote."""

    epoch: int
    holder: str
    place: str | None
    opened_at: str
    fenced_by: int | None  # the next epoch, whose open fenced this holder
    versions: list[VersionMark] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def box(self) -> str | None:
        """The box (cluster) a holder id names after ``@``, as the o41 client writes it."""
        return self.holder.partition("@")[2] or None


@dataclass
class ArtifactView:
    name: str
    epoch: int
    holder: str | None
    latest: str | None
    versions: int
    size: int
    created_at: str
    forked_from: str | None  # o41://project/name/step-XXXXXXXX
    lanes: list[Lane]
    forks: list[str] = field(default_factory=list)  # artifacts forked from this one

    @property
    def fenced_holders(self) -> list[str]:
        return [lane.holder for lane in self.lanes if lane.fenced_by is not None]

    @property
    def project(self) -> str:
        return self.name.partition("/")[0]

    @property
    def conformance(self) -> bool:
        """Left by a conformance run: the suite puts each run under a ``conf-*`` project."""
        return is_conformance(self.project)


CONFORMANCE_PREFIX = "conf-"


def is_conformance(project: str) -> bool:
    return project.startswith(CONFORMANCE_PREFIX)


@dataclass(frozen=True)
class Project:
    name: str
    artifacts: int
    conformance: bool


def projects(views: list[ArtifactView]) -> list[Project]:
    """Each project with its artifact count: the user's own first, conformance runs last."""
    counts: dict[str, int] = defaultdict(int)
    for v in views:
        counts[v.project] += 1
    return [Project(name, n, is_conformance(name))
            for name, n in sorted(counts.items(), key=lambda kv: (is_conformance(kv[0]), kv[0]))]


def artifacts(backend: Backend) -> list[ArtifactView]:
    """Every artifact with its timeline of opens, versions, refused uploads and forks."""
    conn = backend.conn()
    cross_reads: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in store.overview.cross_cloud_reads(conn):
        cross_reads[(row["artifact"], row["version"])].append(row["place"] or "unknown place")
    forks: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in store.overview.forks(conn):
        forks[(row["forked_from_artifact"], row["forked_from_version"])].append(row["name"])
    lanes: dict[str, dict[int, Lane]] = defaultdict(dict)
    for row in store.overview.opens(conn):
        lanes[row["artifact"]][row["epoch"]] = Lane(
            row["epoch"], row["holder"], row["place"], row["created_at"], None
        )
    for row in store.overview.version_marks(conn):
        mark = VersionMark(
            row["version"], row["step"], row["location"], row["size"], row["epoch"],
            row["holder"], row["placement"], row["created_at"],
            cross_reads.get((row["artifact"], row["version"]), []),
            forks.get((row["artifact"], row["version"]), []),
        )
        _lane(lanes[row["artifact"]], row["epoch"], row["holder"]).versions.append(mark)
    out = []
    for row in store.overview.every_artifact(conn):
        by_epoch = lanes[row["name"]]
        for up in store.overview.open_uploads_of(conn, row["name"]):
            state = "fenced" if up["epoch"] < row["epoch"] else "uploading"
            _lane(by_epoch, up["epoch"], up["holder"]).attempts.append(
                Attempt(up["version"], up["location"], state)
            )
        ordered = [by_epoch[e] for e in sorted(by_epoch)]
        for lane, newer in zip(ordered, ordered[1:], strict=False):
            lane.fenced_by = newer.epoch
        forked = None
        if row["forked_from_artifact"]:
            forked = f"o41://{row['forked_from_artifact']}/{row['forked_from_version']}"
        latest = max((v for lane in ordered for v in lane.versions), key=lambda v: v.step,
                     default=None)
        out.append(ArtifactView(
            row["name"], row["epoch"], row["holder"], latest.version if latest else None,
            row["versions"], sum(v.size for lane in ordered for v in lane.versions),
            row["created_at"], forked, ordered,
            sorted({a for (src, _), names in forks.items() if src == row["name"] for a in names}),
        ))
    # The user's own artifacts first; those a conformance run left behind after them.
    return sorted(out, key=lambda a: (a.conformance, a.name))


def _lane(by_epoch: dict[int, Lane], epoch: int, holder: str) -> Lane:
    """The lane of `epoch`, made up when its token is gone (it never is, short of a wipe)."""
    if epoch not in by_epoch:
        by_epoch[epoch] = Lane(epoch, holder, None, "", None)
    return by_epoch[epoch]


@dataclass(frozen=True)
class RouteUse:
    route: str
    write_bytes: int
    read_bytes: int
    cost_usd: float


@dataclass(frozen=True)
class Saving:
    """Writes from one place that had no location there: what a location there would save."""

    place: str | None  # None: boxes that did not say where they run
    kind: str  # default (PLACE-2) or fallback (PLACE-3)
    location: str
    route: str
    versions: int
    bytes: int
    saved_usd: float


@dataclass(frozen=True)
class Stored:
    """What a location holds now: committed versions and their bytes (a delete, VER-7,
    takes them off at once)."""

    location: str
    versions: int
    bytes: int


@dataclass(frozen=True)
class UsageView:
    routes: list[RouteUse]
    total_cost_usd: float
    savings: list[Saving]
    transfers: list[dict]
    prices: dict
    stored: list[Stored] = field(default_factory=list)


def usage(backend: Backend) -> UsageView:
    """Bytes and cost by route, and where a new location pays, largest saving first."""
    report = read_usage(backend, ANYONE, None)
    routes = [
        RouteUse(r, report["routes"][r]["write_bytes"], report["routes"][r]["read_bytes"],
                 report["routes"][r]["cost_usd"])
        for r in ROUTES
    ]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for p in report["placements"]:
        place = f"{p['place']['cloud']}/{p['place']['region']}" if p["place"] else None
        location = f"{p['location']['cloud']}/{p['location']['region']}"
        groups[(place, p["kind"], location, p["route"])].append(p)
    prices = backend.settings.prices
    savings = []
    for (place, kind, location, route), rows in groups.items():
        nbytes = sum(r["bytes"] for r in rows)
        box_cloud = rows[0]["place"]["cloud"] if rows[0]["place"] else None
        # With a location at the box the write would be local: $0. Its cost now is saved.
        saved = prices.cost(nbytes, "write", route, rows[0]["location"]["cloud"], box_cloud)
        savings.append(Saving(place, kind, location, route, sum(r["versions"] for r in rows),
                              nbytes, saved))
    savings.sort(key=lambda s: (-s.saved_usd, -s.bytes, s.place or ""))
    # Equal costs keep step order within an artifact, reads and writes of a step together.
    transfers = sorted(report["transfers"], key=lambda t: (-t["cost_usd"], t["artifact"],
                                                           t["version"], t["direction"]))
    stored = []
    for row in store.usage.stored_by_location(backend.conn()):
        place = backend.location(row["location"]).place
        stored.append(Stored(str(place), row["n"], row["bytes"]))
    return UsageView(routes, report["total_cost_usd"], savings, transfers, report["prices"],
                     stored)
