"""Legal variants: proxy transformations that keep an implementation CORRECT.

A mutant breaks one sentence of docs/contract.md and the suite must fail it; a legal variant
changes only what the contract leaves open (error wording, id formats, made-up holders, the
shape of signed URLs, extra JSON fields, key and row order, time formats, epoch steps, 201
for success, whether a name conflict is reported at write or at commit) and the suite must
still PASS. A test that fails under one over-specifies the contract.

``python -m conformance.mutants legal --spawn`` runs the whole suite against each variant
(:mod:`conformance.mutants.legal_runner`); ``all`` chains every variant at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from datetime import datetime
from typing import Any
from typing import ClassVar

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.legal_base import LEGAL
from conformance.mutants.legal_base import legal
from conformance.mutants.legal_base import walk

__all__ = ["LEGAL", "Chain", "JsonVariant", "WalkedVariant", "legal", "make_variant", "walk"]

#: JSON keys whose object values are maps of data (route or cloud names), not records:
#: a field added there would be a new route or price, not an extra field.
DATA_MAPS = frozenset({"routes", "prices"})
TIME_KEYS = frozenset({"created_at", "expires_at", "urls_expire_at"})


class JsonVariant(Mutant):
    """Rewrites the JSON body of API replies with :meth:`change` (None: keep the reply)."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.kind != "api":
            return self.data(request, resp)
        body = resp.json()
        if body is None:
            return resp
        changed = self.change(request, resp, body)
        return resp if changed is None else self.encode(resp, changed)

    def change(self, request: Request, resp: Response, body: Any) -> Any:
        return None

    def data(self, request: Request, resp: Response) -> Response:
        return resp

    def encode(self, resp: Response, body: Any) -> Response:
        return resp.with_json(body)


class WalkedVariant(JsonVariant):
    """Rewrites every node of an API reply's JSON, bottom-up, with :meth:`node`."""

    def change(self, request: Request, resp: Response, body: Any) -> Any:
        return walk(body, self.node)

    def node(self, key: str | None, node: Any) -> Any:
        return node


# --- wording and shape of JSON ------------------------------------------------------------


@legal
class ErrorsReworded(JsonVariant):
    name = "errors-reworded"
    clause = "-"
    summary = "every error message says something else, with extra fields beside code/message"

    def change(self, request, resp, body):  # noqa: ANN001, ANN201
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict) or "code" not in err:
            return None
        note = f"Request not done ({resp.status}); see the code for why."
        return {"error": {**err, "message": note, "details": [{"hint": "legal variant"}]},
                "request_id": "req-0001"}


@legal
class ExtraFields(WalkedVariant):
    name = "extra-fields"
    clause = "-"
    summary = "every JSON record in a reply carries extra fields (never inside routes/prices)"

    def node(self, key: str | None, node: Any) -> Any:
        if isinstance(node, dict) and key not in DATA_MAPS:
            return {**node, "x_extra": {"note": "ignored by clients"}, "kind_v": 2}
        return node


@legal
class KeysReordered(JsonVariant):
    name = "keys-reordered"
    clause = "-"
    summary = "every JSON object's keys in reverse order, pretty-printed with spaces"

    def change(self, request, resp, body):  # noqa: ANN001, ANN201
        return walk(body, lambda k, n: dict(reversed(n.items())) if isinstance(n, dict) else n)

    def encode(self, resp: Response, body: Any) -> Response:
        return resp.with_body(json.dumps(body, indent=3).encode())


@legal
class RowsReordered(WalkedVariant):
    name = "rows-reordered"
    clause = "-"
    summary = "files, transfers, placements and warnings lists in reverse order"

    def node(self, key: str | None, node: Any) -> Any:
        if key in ("files", "transfers", "placements", "warnings") \
                and isinstance(node, list):
            return node[::-1]
        return node


def _retime(value: Any) -> Any:
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return value
    return when.isoformat(timespec="microseconds")


@legal
class TimesReformatted(WalkedVariant):
    name = "times-reformatted"
    clause = "-"
    summary = "created_at and expiry times as ISO 8601 with microseconds and +00:00"

    def node(self, key: str | None, node: Any) -> Any:
        if isinstance(node, dict):
            return {k: _retime(v) if k in TIME_KEYS and isinstance(v, str) else v
                    for k, v in node.items()}
        return node


@legal
class EpochJumps(WalkedVariant):
    name = "epoch-jumps"
    clause = "-"
    summary = "epochs reported as 7*e + 3: still greater than every earlier epoch"

    def node(self, key: str | None, node: Any) -> Any:
        if isinstance(node, dict) and isinstance(node.get("epoch"), int) \
                and not isinstance(node.get("epoch"), bool):
            return {**node, "epoch": node["epoch"] * 7 + 3}
        return node


@legal
class CreatedStatus(JsonVariant):
    name = "created-status"
    clause = "-"
    summary = "successful open, write, commit and PUT answer 201 instead of 200"

    def change(self, request, resp, body):  # noqa: ANN001, ANN201
        return None

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        making = request.method in ("POST", "PUT")
        return replace(resp, status=201) if making and resp.status == 200 else resp


@legal
class UsageSparse(JsonVariant):
    name = "usage-sparse"
    clause = "-"
    summary = "usage routes without traffic are left out; costs carry float rounding noise"

    def change(self, request, resp, body):  # noqa: ANN001, ANN201
        if request.endpoint != "usage/read" or not resp.ok or not isinstance(body, dict):
            return None
        routes = body.get("routes")
        if isinstance(routes, dict):
            body["routes"] = {r: v for r, v in routes.items() if isinstance(v, dict)
                              and (v.get("write_bytes") or v.get("read_bytes"))}
        for row in body.get("transfers") or []:
            if isinstance(row, dict) and isinstance(row.get("cost_usd"), float):
                row["cost_usd"] = row["cost_usd"] * (1 + 1e-12)
        return body


@legal
class ExtraWarning(JsonVariant):
    name = "extra-warning"
    clause = "-"
    summary = "every successful open carries one more, unrelated warning"

    def change(self, request, resp, body):  # noqa: ANN001, ANN201
        if request.endpoint != "artifacts/open" or not resp.ok or not isinstance(body, dict):
            return None
        return {**body, "warnings": [*body.get("warnings", []), "this server keeps no backups"]}


@legal
class DataHeaders(JsonVariant):
    name = "data-headers"
    clause = "-"
    summary = ("data replies with another Content-Type, an ETag, no Accept-Ranges, and a "
               "plain-text 416 without Content-Range")

    def data(self, request: Request, resp: Response) -> Response:
        dropped = ("content-type", "etag", "accept-ranges")
        kept = tuple((k, v) for k, v in resp.headers if k.lower() not in dropped)
        if resp.status >= 400 and resp.status != 416:
            return resp  # 403 is a contract error: its JSON body and headers stay
        if resp.status == 416:  # only the status is asked for: any body, no Content-Range
            kept = tuple((k, v) for k, v in kept if k.lower() != "content-range")
            text = f"{resp.status} refused\n".encode()
            kept += (("Content-Type", "text/plain"),)
            return replace(resp, headers=kept, body=b"" if request.method == "HEAD" else text)
        kept += (("Content-Type", "binary/octet-stream"), ("ETag", '"legal-etag"'))
        return replace(resp, headers=kept)


@legal
class PricesOtherShape(JsonVariant):
    name = "prices-other-shape"
    clause = "-"
    summary = "usage's prices (a shape the contract leaves open) as a list of route/cloud rows"

    def change(self, request, resp, body):  # noqa: ANN001, ANN201
        if request.endpoint != "usage/read" or not isinstance(body, dict) \
                or not isinstance(body.get("prices"), dict):
            return None
        rows = [{"route": route, "cloud": cloud, "usd_per_gb": usd}
                for route, table in body["prices"].items() if isinstance(table, dict)
                for cloud, usd in table.items()]
        return {**body, "prices": {"currency": "USD", "per_gb": rows}}


@legal
class EmptyQueryParts(WalkedVariant):
    """Signed URLs carry query parts without a value (``place=``, ``trace``), which say
    nothing: the variant drops them again before the implementation sees the URL, so a URL
    with or without them serves the same bytes."""

    name = "empty-query-parts"
    clause = "-"
    summary = "signed URLs carry empty query parts (place=, trace) that change nothing"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data":
            request = replace(request, query=tuple((k, v) for k, v in request.query if v))
        return super().handle(request, upstream)

    def node(self, key: str | None, node: Any) -> Any:
        if key == "url" and isinstance(node, str):
            return node + ("&" if "?" in node else "?") + "place=&trace"
        return node


# --- chaining ------------------------------------------------------------------------------


@dataclass
class _Via:
    """The upstream as one variant sees it: the next variant of the chain, then the real one."""

    variant: Mutant
    inner: Upstream

    @property
    def public_origin(self) -> str:
        return str(getattr(self.inner, "public_origin", ""))

    def send(self, request: Request) -> Response:
        return self.variant.handle(request, self.inner)


@dataclass
class Chain(Mutant):
    """Several variants at once; the first listed sees the client's requests first."""

    name: ClassVar[str] = "all"
    summary: ClassVar[str] = "every legal variant at once"
    parts: list[Mutant] = field(default_factory=list)

    def handle(self, request: Request, upstream: Upstream) -> Response:
        up: Upstream = upstream
        for part in reversed(self.parts[1:]):
            up = _Via(part, up)
        return self.parts[0].handle(request, up) if self.parts else up.send(request)


#: Variants left out of ``all``: each is fine alone, but together they would report a
#: data-plane 403 body as text where another variant expects to reword JSON.
NOT_CHAINED: frozenset[str] = frozenset()


def make_variant(name: str) -> Mutant:
    """An instance of the variant ``name``; ``all`` chains every registered one."""
    if name == "all":
        return Chain(parts=[LEGAL[n]() for n in sorted(LEGAL) if n not in NOT_CHAINED])
    if name not in LEGAL:
        raise SystemExit(f"unknown legal variant {name!r}: {sorted(LEGAL)} or all")
    return LEGAL[name]()


# Imported last: its variants register into the same LEGAL table.
from conformance.mutants import legal_ids  # noqa: E402, F401
