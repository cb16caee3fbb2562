"""Rewriting ``usage/read`` replies for the USAGE-1 mutants, keeping them self-consistent.

A rewritten row's cost follows its bytes and route; routes and the total follow the rows
(:func:`retotal`). The bends below are those of the USAGE rows (rows.py): :func:`usage`
changes a report, :func:`repriced` and :func:`placements` its rows, and :func:`metered`
(a watched row's) what the data plane served. :class:`UsageMutant` is :func:`usage` as a
class, for a mutant that stays one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Turn

__all__ = ["ANY", "USAGE", "Row", "UsageMutant", "leaves", "lower_place", "metered",
           "place_text", "placements", "rate", "repriced", "retotal", "usage", "with_extra"]

Row = dict[str, Any]


def place_text(place: Any) -> str | None:
    """A row's place as ``cloud/region`` with the cloud lower-cased."""
    if not isinstance(place, dict):
        return None
    return f"{str(place.get('cloud')).lower()}/{place.get('region')}"


def rate(prices: dict, row: Row, route: str | None = None) -> float:
    """USD per byte of ``row`` on ``route`` (its own by default), by the published table:
    a read leaves the location's cloud, a write leaves the box's cloud."""
    route = route or row.get("route")
    if route not in ("inter_region", "cross_cloud"):
        return 0.0
    table = prices.get(route) or {}
    return float(table.get(leaves(row), table.get("other", 0.0))) / 1e9


def leaves(row: Row) -> str:
    """The cloud a row's bytes leave: the location's for a read, the box's for a write."""
    side = row.get("location") if row.get("direction") == "read" else row.get("place")
    return str((side or {}).get("cloud", "other")).lower()


def retotal(body: dict) -> dict:
    """Routes and total recomputed from the transfer rows."""
    routes = {r: {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0}
              for r in ("local", "inter_region", "cross_cloud")}
    for row in body.get("transfers") or []:
        agg = routes.setdefault(row["route"], {"write_bytes": 0, "read_bytes": 0,
                                               "cost_usd": 0.0})
        agg[f"{row['direction']}_bytes"] += row["bytes"]
        agg["cost_usd"] += row["cost_usd"]
    body["routes"] = routes
    body["total_cost_usd"] = sum(r["cost_usd"] for r in routes.values())
    return body


class UsageMutant(Mutant):
    """Rewrites successful ``usage/read`` replies with :meth:`change`."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        body = resp.json()
        if request.endpoint != "usage/read" or not resp.ok or not isinstance(body, dict) \
                or not isinstance(body.get("transfers"), list):
            return resp
        changed = self.change(request, upstream, body)
        return resp if changed is None else resp.with_json(changed)

    def forward(self, request: Request, upstream: Upstream) -> Response:
        return upstream.send(request)

    def change(self, request: Request, upstream: Upstream, body: dict) -> dict | None:
        return None


def with_extra(body: dict, extra: dict[tuple[Any, ...], int]) -> dict | None:
    """A report whose read rows have ``extra`` bytes (by :func:`read_key`), priced; None
    when no row has any."""
    touched = False
    for row in body["transfers"]:
        key = (row.get("artifact"), row.get("version"), place_text(row.get("place")),
               row.get("route"))
        if row.get("direction") == "read" and extra.get(key):
            row["bytes"] += extra[key]
            row["cost_usd"] = row["bytes"] * rate(body.get("prices") or {}, row)
            touched = True
    return retotal(body) if touched else None


def lower_place(place: str | None) -> str | None:
    """A place as the reader spelled it (``GCP/x``), with the cloud lower-cased."""
    if not place:
        return None
    cloud, _, region = place.partition("/")
    return f"{cloud.lower()}/{region}"


# --- bends of the USAGE rows --------------------------------------------------------------

#: The exchanges a usage row bends: usage reports; a metered row sees every exchange.
USAGE, ANY = On(("usage/read",)), On(kind="any", replies="any")
Change = Callable[[dict, Turn], dict | None]


def usage(change: Change) -> Bend:
    """A usage report (a reply with a list of transfers) changed by ``change``."""

    def bend(reply: Response, turn: Turn) -> Response:
        body = reply.json()
        if turn.request.endpoint != "usage/read" or not reply.ok or not isinstance(body, dict) \
                or not isinstance(body.get("transfers"), list):
            return reply
        new = change(body, turn)
        return reply if new is None else reply.with_json(new)

    return bend


def repriced(wrong: Callable[[dict, Row], float | None]) -> Bend:
    """A report whose rows ``wrong`` prices (USD per GB, None: right) at another rate;
    routes and total follow the rows."""

    def change(body: dict, turn: Turn) -> dict | None:
        touched = False
        for row in body["transfers"]:
            per_gb = wrong(body.get("prices") or {}, row)
            if per_gb is not None:
                row["cost_usd"], touched = row["bytes"] * per_gb / 1e9, True
        return retotal(body) if touched else None

    return usage(change)


def placements(fix: Callable[[list[Row]], list[Row] | None]) -> Bend:
    """A report whose ``placements`` rows ``fix`` gives anew (None: as they were)."""

    def change(body: dict, turn: Turn) -> dict | None:
        rows = fix([p for p in body.get("placements") or [] if isinstance(p, dict)])
        return None if rows is None else {**body, "placements": rows}

    return usage(change)


Served = Callable[[Turn, Response, dict[str, Any]], None]


def served(see: Served, then: Bend) -> Bend:
    """A watched row's bend: a data-plane request through a URL handed out is shown to
    ``see`` (the turn, its reply, what the URL points at) and answered as it was; every
    other exchange is bent by ``then``."""

    def bend(reply: Response, turn: Turn) -> Response:
        info = turn.seen.info(turn.request) if turn.seen and turn.request.kind == "data" \
            else None
        if info is None:
            return then(reply, turn)
        see(turn, reply, info)
        return reply

    return bend


def read_key(info: dict[str, Any]) -> tuple[Any, ...]:
    """The read row a data-plane GET through URL ``info`` is counted on."""
    return (info["artifact"], info["version"], lower_place(info["place"]),
            info["route"] or "cross_cloud")


def metered(delta: Callable[[Turn, Response, dict[str, Any]], int]) -> Bend:
    """Reports whose read rows are off by ``delta`` bytes for each data-plane reply (the
    turn, its reply, its URL's facts): :class:`ServedBytes` as a bend."""

    def see(turn: Turn, reply: Response, info: dict[str, Any]) -> None:
        if info["method"] != "GET" or not isinstance(info.get("size"), int):
            return
        n = delta(turn, reply, info)
        if n:
            with turn.lock:
                extra = turn.memory.setdefault("extra", defaultdict(int))
                extra[read_key(info)] += n

    def change(body: dict, turn: Turn) -> dict | None:
        with turn.lock:
            extra = dict(turn.memory.get("extra", {}))
        return with_extra(body, extra)

    return served(see, usage(change))

