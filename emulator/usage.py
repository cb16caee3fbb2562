"""Metering and the usage report (USAGE-1).

Every byte the data plane stores or serves is added to one row per direction, artifact,
version, location, place and route, so eight ranged GETs of a checkpoint from one box are
one row. Costs are computed from the price table when the report is read.
"""

from __future__ import annotations

import json

from . import db, names
from .backend import Backend
from .keys import Principal
from .locations import ROUTES, route
from .prices import GB
from .stored import place_from_text


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


class RawJSON(str):
    """JSON text made by SQLite, to be spliced into a reply as it is, not encoded again."""


def _transfer_kinds(backend: Backend, conn, where: str, args: tuple) -> list[tuple]:
    """The few kinds of transfer row (direction, location, place, route), priced once each."""
    kinds = []
    for direction, location, place, rt in conn.execute(
        f"SELECT DISTINCT direction, location, place, route FROM transfers AS t {where}", args
    ):
        loc = backend.location(location)
        p = place_from_text(place)
        per_gb = backend.settings.prices.per_gb_of(direction, rt, loc.cloud,
                                                   p.cloud if p else None)
        place_json = json.dumps(p.json()) if p else "null"
        kinds.append((direction, location, place, rt, per_gb, json.dumps(loc.json()), place_json))
    return kinds


def _where(conn, who: Principal, artifact: str | None) -> tuple[str, tuple]:
    """Rows of `artifact` (or all) that the key can read; usually no scope filter is needed."""
    if artifact is not None:
        return "WHERE t.artifact = ?", (artifact,)
    artifacts = [a for (a,) in conn.execute("SELECT DISTINCT artifact FROM transfers")]
    readable = [a for a in artifacts if who.can("read", a)]
    if len(readable) == len(artifacts):
        return "", ()
    return "WHERE t.artifact IN (SELECT value FROM json_each(?))", (json.dumps(readable),)


def _transfers(backend: Backend, who: Principal, artifact: str | None,
               routes: dict) -> RawJSON:
    """Every transfer row as JSON, built inside SQLite: a report can hold tens of thousands
    of rows, and shaping and encoding them in Python took most of the call's time."""
    conn = backend.conn()
    where, args = _where(conn, who, artifact)
    kinds = _transfer_kinds(backend, conn, where, args)
    if not kinds:
        return RawJSON("[]")
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(kinds))
    prefix = (
        "WITH kinds (direction, location, place, route, per_gb, loc_json, place_json) "
        f"AS (VALUES {values}) "
    )
    # CROSS JOIN keeps transfers as the outer loop, so rows come in the report index's order.
    join = ("FROM transfers AS t CROSS JOIN kinds AS k ON k.direction = t.direction "
            "AND k.location = t.location AND k.place = t.place AND k.route = t.route")
    params = tuple(v for kind in kinds for v in kind) + args
    for rt, direction, nbytes, cost in conn.execute(
        f"{prefix} SELECT t.route, t.direction, SUM(t.bytes), SUM(t.bytes * k.per_gb) / {GB}.0 "
        f"{join} {where} GROUP BY t.route, t.direction",
        params,
    ):
        routes[rt][f"{direction}_bytes"] += nbytes
        routes[rt]["cost_usd"] += cost
    (text,) = conn.execute(
        f"{prefix} SELECT json_group_array(json_object("
        "'direction', direction, 'artifact', artifact, 'version', version, "
        "'location', json(loc_json), 'place', json(place_json), 'route', route, "
        "'bytes', bytes, 'cost_usd', cost_usd)) FROM ("
        "SELECT t.direction, t.artifact, t.version, k.loc_json, k.place_json, t.route, t.bytes, "
        f"t.bytes * k.per_gb / {GB}.0 AS cost_usd {join} {where} "
        "ORDER BY t.artifact, t.version, t.direction)",
        params,
    ).fetchone()
    return RawJSON(text)


def _place_json(text: str | None) -> dict | None:
    p = place_from_text(text)
    return p.json() if p is not None else None


def read_usage(backend: Backend, who: Principal, artifact: object | None, *,
               raw_transfers: bool = False) -> dict:
    """The usage report; with `raw_transfers`, `transfers` is SQLite-made `RawJSON` text
    for the HTTP layer to splice in, else a list of dicts."""
    conn = backend.conn()
    prices = backend.settings.prices
    name = None
    if artifact is not None:
        name = names.artifact_name(artifact)
        who.require("read", name)
    args = (name,) if name is not None else ()
    routes = {r: {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0} for r in ROUTES}
    raw = _transfers(backend, who, name, routes)
    transfers = raw if raw_transfers else json.loads(raw)
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
