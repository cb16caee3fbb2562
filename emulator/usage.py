"""Metering and the usage report (USAGE-1).

Every byte the data plane stores or serves is added to one row per direction, artifact,
version, location, place and route, so eight ranged GETs of a checkpoint from one box are
one row. Costs are computed from the price table when the report is read.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Float,
    Text,
    and_,
    bindparam,
    cast,
    column,
    func,
    literal_column,
    select,
    union_all,
)
from sqlalchemy.sql import ColumnElement

from . import db, names
from .backend import Backend
from .keys import Principal
from .locations import ROUTES, route
from .prices import GB
from .stored import place_from_text
from .versions import require_artifact

T = db.transfers
_ARTIFACTS = select(T.c.artifact).distinct()
_KINDS = select(T.c.direction, T.c.location, T.c.place, T.c.route).distinct()
_KIND_COLUMNS = (column("direction", Text), column("location", Text), column("place", Text),
                 column("route", Text), column("per_gb", Float), column("loc_json", Text),
                 column("place_json", Text))


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
        db.add_to(conn, T, {"direction": direction, "artifact": artifact, "version": version,
                            "location": location_id, "place": place or "", "route": r,
                            "bytes": nbytes}, "bytes")


class RawJSON(str):
    """JSON text made by the database, to be spliced into a reply as it is, not encoded
    again."""


def _transfer_kinds(backend: Backend, conn: Connection, query: Any, params: dict
                    ) -> list[tuple]:
    """The few kinds of transfer row (direction, location, place, route), priced once each."""
    kinds = []
    for direction, location, place, rt in conn.execute(query, params):
        loc = backend.location(location)
        p = place_from_text(place)
        per_gb = backend.settings.prices.per_gb_of(direction, rt, loc.cloud,
                                                   p.cloud if p else None)
        place_json = json.dumps(p.json()) if p else "null"
        kinds.append((direction, location, place, rt, per_gb, json.dumps(loc.json()), place_json))
    return kinds


def _where(conn: Connection, who: Principal, artifact: str | None) -> tuple[str, dict]:
    """Which rows (`artifact`'s, all, or those the key can read) and the parameters that
    say so; usually no scope filter is needed."""
    if artifact is not None:
        return "artifact", {"artifact": artifact}
    artifacts = conn.execute(_ARTIFACTS).scalars().all()
    readable = [a for a in artifacts if who.can("read", a)]
    if len(readable) == len(artifacts):
        return "all", {}
    return "readable", {"readable": db.members(conn.dialect.name, readable)}


@functools.cache
def _filter(dialect: str, rows: str) -> ColumnElement | None:
    if rows == "artifact":
        return T.c.artifact == bindparam("artifact")
    if rows == "readable":
        return db.member_of(dialect, T.c.artifact, "readable")
    return None


@functools.cache
def _kinds_query(dialect: str, rows: str) -> Any:
    where = _filter(dialect, rows)
    return _KINDS if where is None else _KINDS.where(where)


@functools.cache
def _report(dialect: str, rows: str, n_kinds: int) -> tuple[Any, Any]:
    """The totals and the JSON rows over `n_kinds` kinds, built once: building them costs
    more than running them on a small report. The kinds are a CTE of bound parameters
    (`k0_direction`, ...), so the compiled form is cached too."""
    selects = [select(*(bindparam(f"k{i}_{c.name}", type_=c.type).label(c.name)
                        for c in _KIND_COLUMNS)) for i in range(n_kinds)]
    priced = (union_all(*selects) if n_kinds > 1 else selects[0]).cte("kinds")
    k = priced.c
    joined = db.ordered_join(T, priced, and_(
        k.direction == T.c.direction, k.location == T.c.location, k.place == T.c.place,
        k.route == T.c.route))
    cost = T.c.bytes * k.per_gb / literal_column(f"{GB}.0")
    totals = (select(T.c.route, T.c.direction, cast(func.sum(T.c.bytes), BigInteger),
                     func.sum(cost)).select_from(joined).group_by(T.c.route, T.c.direction))
    listed = (select(T.c.direction, T.c.artifact, T.c.version, k.loc_json, k.place_json,
                     T.c.route, T.c.bytes, cost.label("cost_usd")).select_from(joined)
              .order_by(T.c.artifact, T.c.version, T.c.direction))
    where = _filter(dialect, rows)
    if where is not None:
        totals, listed = totals.where(where), listed.where(where)
    r = listed.subquery()
    fields = [literal_column("'direction'"), r.c.direction,
              literal_column("'artifact'"), r.c.artifact,
              literal_column("'version'"), r.c.version,
              literal_column("'location'"), db.json_value(r.c.loc_json),
              literal_column("'place'"), db.json_value(r.c.place_json),
              literal_column("'route'"), r.c.route,
              literal_column("'bytes'"), r.c.bytes,
              literal_column("'cost_usd'"), r.c.cost_usd]
    return totals, select(db.json_array(*fields))


def _transfers(backend: Backend, who: Principal, artifact: str | None,
               routes: dict) -> RawJSON:
    """Every transfer row as JSON, built inside the database: a report can hold tens of
    thousands of rows, and shaping and encoding them in Python took most of the call's time."""
    conn = backend.conn()
    dialect = conn.dialect.name
    rows, params = _where(conn, who, artifact)
    kinds = _transfer_kinds(backend, conn, _kinds_query(dialect, rows), params)
    if not kinds:
        return RawJSON("[]")
    for i, kind in enumerate(kinds):
        params.update({f"k{i}_{c.name}": v for c, v in zip(_KIND_COLUMNS, kind, strict=True)})
    totals, as_json = _report(dialect, rows, len(kinds))
    for rt, direction, nbytes, total in conn.execute(totals, params):
        routes[rt][f"{direction}_bytes"] += nbytes
        routes[rt]["cost_usd"] += total
    return RawJSON(conn.execute(as_json, params).scalar_one())


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
    V = db.versions
    groups = (V.c.placement, V.c.place, V.c.location, V.c.artifact)
    query = (select(*groups, func.count().label("n"),
                    cast(func.sum(V.c.size), BigInteger).label("bytes"))
             .where(V.c.placement != "local").group_by(*groups))
    if name is not None:
        query = query.where(V.c.artifact == name)
    for row in conn.execute(query).mappings():
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
