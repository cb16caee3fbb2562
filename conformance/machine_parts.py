"""Pieces of the state machine that are not rules: data, strategies and response checks.

Kept apart so :mod:`conformance.machine` reads as the list of rules and invariants.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from hypothesis import strategies as st

from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.checks import expect_open_placed
from conformance.env import Env
from conformance.model import UNKNOWN_PLACE
from conformance.model import OpenOutcome
from conformance.model import Place
from conformance.model import VersionModel
from conformance.model import route_between
from conformance.rules import check
from conformance.rules import check_equal
from conformance.usage import Charge

__all__ = [
    "FILES",
    "RULE_OF_KIND",
    "Files",
    "MBox",
    "Pending",
    "Staged",
    "check_open",
    "check_version",
    "places_for",
    "shrink_time_limit",
]


@contextlib.contextmanager
def shrink_time_limit(seconds: float) -> Iterator[None]:
    """Cap hypothesis' shrinking time (its default is 5 minutes; every replay here is many
    HTTP calls). Uses the engine's module constant; without it, shrinking is unbounded as
    usual."""
    try:
        from hypothesis.internal.conjecture import engine
    except ImportError:  # pragma: no cover - a future hypothesis layout
        yield
        return
    old = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if old is None:
        yield
        return
    engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = old


ALIASES = ("a", "b", "c")
RULE_OF_KIND = {"local": "PLACE-1", "default": "PLACE-2", "fallback": "PLACE-3"}


def places_for(env: Env) -> list[str]:
    """Where boxes launch: the target's locations, other regions of its clouds, unknown clouds."""
    topo = env.topology
    places = [*topo.locations, *(topo.other_region(c) for c in topo.clouds)]
    return [str(p) for p in (*places, UNKNOWN_PLACE, Place("oci", "us-ashburn-1"))]


@dataclass(frozen=True)
class Files:
    """A checkpoint's files as (name, size) pairs and a seed: bytes are regenerated."""

    sizes: tuple[tuple[str, int], ...]
    seed: int

    def data(self) -> dict[str, bytes]:
        return _data(self.sizes, self.seed)


@functools.lru_cache(maxsize=4)
def _data(sizes: tuple[tuple[str, int], ...], seed: int) -> dict[str, bytes]:
    return make_files(dict(sizes), seed)


FILES = st.builds(
    Files,
    st.lists(
        st.tuples(
            st.sampled_from(["model.pt", "optim.pt", "shards/rank-0.bin", "meta.json"]),
            st.one_of(st.integers(0, 4096), st.integers(0, 3_000_000)),
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda t: t[0],
    ).map(tuple),
    st.integers(0, 2**16),
)


@dataclass
class MBox:
    """A box as the machine knows it; ``epoch`` is its token's epoch."""

    label: str
    artifact: str
    place: Place
    token: str
    epoch: int

    def __repr__(self) -> str:
        return f"MBox({self.label!r}, {str(self.place)!r}, epoch={self.epoch})"


@dataclass(frozen=True)
class Staged:
    """The files of an upload many writes made (VER-5), regenerated like :class:`Files`."""

    parts: tuple[Files, ...]

    def data(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for part in self.parts:
            out.update(part.data())
        return out


@dataclass
class Pending:
    """An upload that was written and PUT but not committed yet. ``joined`` are the files of
    later writes into it (VER-5); ``streamed`` the names declared by name alone (VER-6),
    which its commit must list; ``list_declared``: the commit lists declared files too."""

    box: MBox
    version: str
    upload: str
    files: Files
    charge: Charge | None
    joined: list[Files] = field(default_factory=list)
    streamed: set[str] = field(default_factory=set)
    list_declared: bool = False

    def stored(self) -> Files | Staged:
        """What the committed version holds: every file of every write."""
        return Staged((self.files, *self.joined)) if self.joined else self.files

    def data(self) -> dict[str, bytes]:
        return self.stored().data()

    def listing(self) -> list[dict[str, Any]] | None:
        """The commit's ``files``: each streamed file as written (and the declared ones when
        ``list_declared``); None (no list) when there is nothing to list."""
        if not self.streamed and not self.list_declared:
            return None
        specs = file_specs(self.data())
        return [s.as_json() for s in specs if self.list_declared or s.name in self.streamed]

    def __repr__(self) -> str:
        return f"Pending({self.box.label!r}, {self.version!r})"


def check_open(
    body: dict[str, Any], outcome: OpenOutcome, place: Place, holder: str, fallback: Place
) -> None:
    """An open's answer against the model's prediction (everything but the epoch)."""
    check_equal(body.get("holder"), holder, "OPEN-1", "holder echoed by the open")
    fenced = None
    if outcome.fenced is not None:
        fenced = {"epoch": outcome.fenced[0], "holder": outcome.fenced[1]}
    check_equal(body.get("fenced"), fenced, "FENCE-2", "whom the open fenced")
    want = outcome.resume_from
    got = body.get("resume_from")
    check_equal(
        (got or {}).get("version"),
        want.name if want else None,
        outcome.rule,
        "resume_from version",
    )
    if want is not None and got is not None:
        check_version(got, want, place, outcome.rule, signed=True)
    placement = outcome.placement
    assert placement is not None
    rule = RULE_OF_KIND[placement.kind]
    expect_open_placed(body, placement, fallback, rule, rule, f"an open from {place}")


def check_version(
    got: dict[str, Any],
    want: VersionModel,
    place: Place | None,
    rule: str,
    *,
    signed: bool,
) -> None:
    check_equal(
        Place.from_json(got.get("location")),
        want.location,
        "PLACE-4",
        f"location of {want.name}",
    )
    route = route_between(want.location, place)
    check_equal(
        (got.get("route"), got.get("cross_cloud")),
        (route, None if route is None else route == "cross_cloud"),
        "XC-1",
        f"route of {want.name} at {want.location} read from {place}",
    )
    files = {f["name"]: (f["size"], f["sha256"]) for f in got.get("files", [])}
    check_equal(
        files, {f.name: (f.size, f.sha256) for f in want.files}, rule, f"files of {want.name}"
    )
    if signed:
        check(all(f.get("url") for f in got["files"]), rule, f"{want.name} is not signed")


def small_files(most_bytes: int, most_files: int) -> st.SearchStrategy[Files]:
    """Checkpoints of 1 to ``most_files`` of the usual names, each of at most ``most_bytes``."""
    return st.builds(
        Files,
        st.lists(
            st.tuples(st.sampled_from(["model.pt", "optim.pt", "meta.json"]),
                      st.integers(0, most_bytes)),
            min_size=1,
            max_size=most_files,
            unique_by=lambda t: t[0],
        ).map(tuple),
        st.integers(0, 2**16),
    )


#: Small checkpoints for the moves that test refusals, not transfer sizes (kept fast).
SMALL_FILES = small_files(2048, 3)
