"""Transfers (the usage meter) and the placements of versions written away from home."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
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

from .. import db
from ..core.prices import GB

T, V = db.transfers, db.versions
_ARTIFACTS = select(T.c.artifact).distinct()
_KINDS = select(T.c.direction, T.c.location, T.c.place, T.c.route).distinct()
#: The columns of a priced kind of transfer row, as `kinds` rows give them back.
KIND_COLUMNS = (column("direction", Text), column("location", Text), column("place", Text),
                column("route", Text), column("per_gb", Float), column("loc_json", Text),
                column("place_json", Text))
_PLACED = (V.c.placement, V.c.place, V.c.location, V.c.artifact)
_PLACEMENTS = (select(*_PLACED, func.count().label("n"),
                      cast(func.sum(V.c.size), BigInteger).label("bytes"))
               .where(V.c.placement != "local").group_by(*_PLACED))
_PLACEMENTS_OF = _PLACEMENTS.where(V.c.artifact == bindparam("artifact"))
_STORED = (select(V.c.location, func.count().label("n"),
                  cast(func.sum(V.c.size), BigInteger).label("bytes"))
           .group_by(V.c.location).order_by(V.c.location))


def add(conn: Connection, row: Mapping[str, Any]) -> None:
    """Add `row["bytes"]` to the transfer row of its direction, artifact, version,
    location, place and route (inside a transaction)."""
    db.add_to(conn, T, dict(row), "bytes")


def artifacts(conn: Connection) -> Sequence[str]:
    """Every artifact that has transfers."""
    return conn.execute(_ARTIFACTS).scalars().all()


def scope(conn: Connection, artifact: str | None, readable: list[str] | None
          ) -> tuple[str, dict]:
    """Which rows a report reads: one artifact's, all, or the readable ones."""
    if artifact is not None:
        return "artifact", {"artifact": artifact}
    if readable is None:
        return "all", {}
    return "readable", {"readable": db.members(conn.dialect.name, readable)}


@functools.cache
def _filter(dialect: str, rows: str) -> ColumnElement | None:
    if rows == "artifact":
        return T.c.artifact == bindparam("artifact")
    if rows == "readable":
        return db.member_of(dialect, T.c.artifact, "readable")
    return None


def kinds(conn: Connection, rows: str, params: dict) -> Sequence[tuple]:
    """The few kinds of transfer row (direction, location, place, route) in scope."""
    where = _filter(conn.dialect.name, rows)
    query = _KINDS if where is None else _KINDS.where(where)
    return [tuple(r) for r in conn.execute(query, params)]


@functools.cache
def _report(dialect: str, rows: str, n_kinds: int) -> tuple[Any, Any]:
    """The totals and the JSON rows over `n_kinds` kinds, built once: building them costs
    more than running them on a small report. The kinds are a CTE of bound parameters
    (`k0_direction`, ...), so the compiled form is cached too."""
    selects = [select(*(bindparam(f"k{i}_{c.name}", type_=c.type).label(c.name)
                        for c in KIND_COLUMNS)) for i in range(n_kinds)]
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


def report(conn: Connection, rows: str, params: dict, priced: Sequence[tuple]
           ) -> tuple[list[tuple], str]:
    """Totals per (route, direction, bytes, cost) and every transfer row as JSON text,
    both priced by `priced` (one tuple of KIND_COLUMNS per kind), made by the database."""
    params = dict(params)
    for i, kind in enumerate(priced):
        params.update({f"k{i}_{c.name}": v for c, v in zip(KIND_COLUMNS, kind, strict=True)})
    totals, as_json = _report(conn.dialect.name, rows, len(priced))
    return ([tuple(r) for r in conn.execute(totals, params)],
            conn.execute(as_json, params).scalar_one())


def placements(conn: Connection, artifact: str | None) -> Sequence[Mapping[str, Any]]:
    """Versions written away from their box's region, grouped by kind, place, location
    and artifact, with their count and bytes."""
    if artifact is None:
        return conn.execute(_PLACEMENTS).mappings().all()
    return conn.execute(_PLACEMENTS_OF, {"artifact": artifact}).mappings().all()


def stored_by_location(conn: Connection) -> Sequence[Mapping[str, Any]]:
    """Committed versions and their bytes per location id, whatever their placement."""
    return conn.execute(_STORED).mappings().all()
