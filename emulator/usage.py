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


def record(
    backend: Backend,
    direction: str,
    artifact: str,
    version: str,
    location_id: str,
    place: str | None,
    nbytes: int,
) -> None:
    if nbytes <= 0:
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
    for row in conn.execute(
        f"SELECT * FROM transfers {where} ORDER BY artifact, version, direction", args
    ):
        if not who.can("read", row["artifact"]):
            continue
        loc = backend.location(row["location"])
        place = place_from_text(row["place"])
        cost = prices.cost(
            row["bytes"], row["direction"], row["route"], loc.cloud, place.cloud if place else None
        )
        agg = routes[row["route"]]
        agg[f"{row['direction']}_bytes"] += row["bytes"]
        agg["cost_usd"] += cost
        transfers.append(
            {
                "direction": row["direction"],
                "artifact": row["artifact"],
                "version": row["version"],
                "location": loc.json(),
                "place": place.json() if place else None,
                "route": row["route"],
                "bytes": row["bytes"],
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
