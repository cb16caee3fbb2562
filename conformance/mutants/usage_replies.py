"""Rewriting ``usage/read`` replies for the USAGE-1 mutants, keeping them self-consistent.

A rewritten row's cost follows its bytes and route; routes and the total follow the rows
(:func:`retotal`). :class:`ServedBytes` watches the data plane to know what was served.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.mutants.base import Mutant, Request, Response, Upstream
from conformance.mutants.m_read import Watching

__all__ = ["Row", "ServedBytes", "UsageMutant", "leaves", "lower_place", "place_text",
           "rate", "retotal"]

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



class ServedBytes(Watching, UsageMutant):
    """Counts, per read row key, a byte error ``delta`` for each data-plane reply, and adds
    it to the matching read rows of usage replies (rows, routes and total stay priced)."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        return UsageMutant.handle(self, request, upstream)

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = Watching.forward(self, request, upstream)
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "GET" and isinstance(info.get("size"), int):
            delta = self.delta(request, resp, info)
            if delta:
                key = (info["artifact"], info["version"], lower_place(info["place"]),
                       info["route"] or "cross_cloud")
                with self.lock:
                    extra = self.state.setdefault("extra", defaultdict(int))
                    extra[key] += delta
        return resp

    def delta(self, request: Request, resp: Response, info: dict) -> int:
        return 0

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            extra = dict(self.state.get("extra", {}))
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

