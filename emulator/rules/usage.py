"""Metering and the usage report (USAGE-1).

Every byte the data plane stores or serves is added to one row per direction, artifact,
version, location, place and route, so eight ranged GETs of a checkpoint from one box are
one row. Costs are computed from the price table when the report is read.
"""

from __future__ import annotations

import json

from .. import store
from ..core import names
from ..core.keys import Principal
from ..core.locations import ROUTES, route
from ..core.stored import place_from_text
from ..state.backend import Backend
from .versions import require_artifact


def record(
    backend: Backend,
    direction: str,
    artifact: str,
    version: str,
    location_id: str,
    place: str | None,
    nbytes: int,
) -> None:
    """Add `nbytes` to a transfer row; a negative amount corrects an earlier optimistic one."""
    if nbytes == 0:
        return
    loc = backend.location(location_id)
    r = route(loc.place, place_from_text(place))
    conn = backend.conn()
    with store.transaction(conn):
        store.usage.add(conn, {"direction": direction, "artifact": artifact, "version": version,
                               "location": location_id, "place": place or "", "route": r,
                               "bytes": nbytes})


class RawJSON(str):
    """JSON text made by the database, to be spliced into a reply as it is, not encoded
    again."""


def _priced(backend: Backend, kinds: list[tuple]) -> list[tuple]:
    """Each kind of transfer row (direction, location, place, route) with its price per GB
    and its location and place as JSON: the few kinds are priced once each."""
    out = []
    for direction, location, place, rt in kinds:
        loc = backend.location(location)
        p = place_from_text(place)
        per_gb = backend.settings.prices.per_gb_of(direction, rt, loc.cloud,
                                                   p.cloud if p else None)
        place_json = json.dumps(p.json()) if p else "null"
        out.append((direction, location, place, rt, per_gb, json.dumps(loc.json()), place_json))
    return out


def _transfers(backend: Backend, who: Principal, artifact: str | None,
               routes: dict) -> RawJSON:
    """Every transfer row as JSON, built inside the database: a report can hold tens of
    thousands of rows, and shaping and encoding them in Python took most of the call's time."""
    conn = backend.conn()
    readable = None
    if artifact is None:  # usually no scope filter is needed
        every = store.usage.artifacts(conn)
        readable = [a for a in every if who.can("read", a)]
        readable = None if len(readable) == len(every) else readable
    rows, params = store.usage.scope(conn, artifact, readable)
    kinds = _priced(backend, list(store.usage.kinds(conn, rows, params)))
    if not kinds:
        return RawJSON("[]")
    totals, as_json = store.usage.report(conn, rows, params, kinds)
    for rt, direction, nbytes, total in totals:
        routes[rt][f"{direction}_bytes"] += nbytes
        routes[rt]["cost_usd"] += total
    return RawJSON(as_json)


def _place_json(text: str | None) -> dict | None:
    p = place_from_text(text)
    return p.json() if p is not None else None


def read_usage(backend: Backend, who: Principal, artifact: object | None, *,
               raw_transfers: bool = False) -> dict:
    """The usage report; with `raw_transfers`, `transfers` is database-made `RawJSON` text
    for the HTTP layer to splice in, else a list of dicts."""
    conn = backend.conn()
    prices = backend.settings.prices
    name = None
    if artifact is not None:
        name = names.artifact_name(artifact)
        who.require("read", name)
        require_artifact(backend, name)
    routes = {r: {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0} for r in ROUTES}
    raw = _transfers(backend, who, name, routes)
    transfers = raw if raw_transfers else json.loads(raw)
    placements = []
    for row in store.usage.placements(conn, name):
        if not who.can("read", row["artifact"]):
            continue
        loc = backend.location(row["location"])
        placements.append(
            {
                "kind": row["placement"],
                "place": _place_json(row["place"]),
                "location": loc.json(),
                "route": route(loc.place, place_from_text(row["place"])),
                "artifact": row["artifact"],
                "versions": row["n"],
                "bytes": row["bytes"],
            }
        )
    return {
        "routes": routes,
        "total_cost_usd": sum(a["cost_usd"] for a in routes.values()),
        "transfers": transfers,
        "placements": placements,
        "prices": prices.json(),
    }
