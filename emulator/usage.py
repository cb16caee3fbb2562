"""Metering and the usage report (USAGE-1).

Every byte the data plane stores or serves is added to one row per direction, artifact,
version, location, place and route, so eight ranged GETs of a checkpoint from one box are
one row. Costs are computed from the price table when the report is read.
"""

from __future__ import annotations

from . import db, names
from .backend import Backend, place_from_text
from .keys import Principal
from .locations import ROUTES, route
from .prices import GB


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
    with db.transaction(conn):
        conn.execute(
            "INSERT INTO transfers (direction, artifact, version, location, place, route, bytes) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT (direction, artifact, version, location, place, "
            "route) DO UPDATE SET bytes = bytes + excluded.bytes",
            (direction, artifact, version, location_id, place or "", r, nbytes),
        )


def _kind(
    backend: Backend, direction: str, location: str, place: str, rt: str, routes: dict
) -> tuple[dict, dict | None, float, dict, str]:
    """What every transfer row of one direction, location, place and route shares."""
    loc = backend.location(location)
    p = place_from_text(place)
    leaving = loc.cloud if direction == "read" else (p.cloud if p else None)
    per_gb = backend.settings.prices.per_gb(rt, leaving)
    return loc.json(), p.json() if p else None, per_gb, routes[rt], f"{direction}_bytes"


def _place_json(text: str | None) -> dict | None:
    p = place_from_text(text)
    return p.json() if p is not None else None


def read_usage(backend: Backend, who: Principal, artifact: object | None) -> dict:
    conn = backend.conn()
    prices = backend.settings.prices
    if artifact is not None:
        name = names.artifact_name(artifact)
        who.require("read", name)
        where, args = "WHERE artifact = ?", (name,)
    else:
        where, args = "", ()
    routes = {r: {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0} for r in ROUTES}
    transfers = []
    # A report can list tens of thousands of rows but few artifacts and few kinds of row:
    # scopes, places and prices are resolved once per artifact and per kind, rows are read
    # as plain tuples, and the rows of one kind share their location and place dicts (a
    # third of the allocations, and of the garbage collector's work, of fresh ones).
    readable: dict[str, bool] = {}
    kinds: dict[tuple[str, str, str, str], tuple[dict, dict | None, float, dict, str]] = {}
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        "SELECT direction, artifact, version, location, place, route, bytes FROM transfers "
        f"{where} ORDER BY artifact, version, direction",
        args,
    )
    for direction, art, version, location, place, rt, nbytes in cursor:
        can = readable.get(art)
        if can is None:
            can = readable[art] = who.can("read", art)
        if not can:
            continue
        kind = kinds.get((direction, location, place, rt))
        if kind is None:
            kind = kinds[direction, location, place, rt] = _kind(
                backend, direction, location, place, rt, routes
            )
        loc_json, place_json, per_gb, agg, field = kind
        cost = nbytes / GB * per_gb  # Prices.cost, with the price looked up once per kind
        agg[field] += nbytes
        agg["cost_usd"] += cost
        transfers.append(
            {
                "direction": direction,
                "artifact": art,
                "version": version,
                "location": loc_json,  # shared by the rows of one kind: read-only
                "place": place_json,
                "route": rt,
                "bytes": nbytes,
                "cost_usd": cost,
            }
        )
    placements = []
    clauses = "WHERE placement != 'local'" + (" AND artifact = ?" if artifact is not None else "")
    for row in conn.execute(
        "SELECT placement, place, location, artifact, COUNT(*) AS n, SUM(size) AS bytes "
        f"FROM versions {clauses} GROUP BY placement, place, location, artifact",
        args,
    ):
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
