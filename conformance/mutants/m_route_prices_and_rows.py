"""Mutants written as a blind adversary would, from docs/contract.md alone, for routes and
money: GB read as GiB, prices looked up by the wrong cloud, rows
split by the reply that issued the URLs or by the write call, placements with the wrong
route, location or kind, and clouds compared as spelled."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.m_place import ReplyMutant, place_of
from conformance.mutants.m_usage import Repriced
from conformance.mutants.usage_replies import (
    Row,
    ServedBytes,
    UsageMutant,
    lower_place,
    place_text,
    rate,
    retotal,
)

KNOWN = {"aws", "gcp", "azure"}


def _cloud(side: Any) -> str:
    return str((side or {}).get("cloud", "")).lower()


# --- USAGE-1.c ---------------------------------------------------------------------------


@mutant
class PricedPerGiB(UsageMutant):
    """Costs divide by 2**30 bytes (GiB), not by the table's GB of 10**9 bytes."""

    name = "usage-priced-per-gib-not-per-gb"
    clause = "USAGE-1.c"
    summary = "every row costs bytes / 2**30 * price (GiB), about 7% too little"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = [r for r in body["transfers"] if r.get("cost_usd")]
        for r in rows:
            r["cost_usd"] = r["bytes"] * rate(body.get("prices") or {}, r) * 1e9 / 2**30
        return retotal(body) if rows else None


@mutant
class GcpInterRegionReadsAtEgress(Repriced):
    """Inter-region reads of gcp versions are priced at gcp's cross-cloud rate (writes are
    right)."""

    name = "usage-gcp-inter-region-reads-priced-as-egress"
    clause = "USAGE-1.c"
    summary = "reading a gcp version from another gcp region costs 0.12/GB instead of 0.02"

    def wrong(self, prices, row):  # noqa: ANN001, ANN201
        if row.get("direction") == "read" and row.get("route") == "inter_region" \
                and _cloud(row.get("location")) == "gcp":
            return 0.12
        return None


@mutant
class AwsReadsFromAzureAtAzureRate(Repriced):
    """A cross-cloud read of an aws version by an azure box is priced at azure's 0.087 (the
    reader's cloud), not aws's 0.09."""

    name = "usage-aws-version-read-from-azure-priced-at-azure-rate"
    clause = "USAGE-1.c"
    summary = "an azure box reading an aws version pays 0.087/GB instead of 0.09"

    def wrong(self, prices, row):  # noqa: ANN001, ANN201
        if row.get("direction") == "read" and row.get("route") == "cross_cloud" \
                and _cloud(row.get("location")) == "aws" and _cloud(row.get("place")) == "azure":
            return 0.087
        return None


@mutant
class UnknownCloudWritesFree(Repriced):
    """Writes from a box in a cloud outside the table cost nothing (its cloud has no
    entry, and the lookup's default is 0 instead of the table's 'any other')."""

    name = "usage-writes-from-an-unknown-cloud-priced-0"
    clause = "USAGE-1.c"
    summary = "bytes written by a box in oracle/x (to the fallback) cost $0 instead of 0.09/GB"

    def wrong(self, prices, row):  # noqa: ANN001, ANN201
        place = row.get("place")
        if row.get("direction") == "write" and isinstance(place, dict) \
                and _cloud(place) not in KNOWN and row.get("cost_usd"):
            return 0.0
        return None


@mutant
class NoPlaceReadsFree(Repriced):
    """Reads through URLs given to a reader without a place are on route ``cross_cloud``
    but cost nothing (no reader cloud, no price)."""

    name = "usage-reads-without-a-place-priced-0"
    clause = "USAGE-1.c"
    summary = "cross_cloud reads by a reader without a place cost $0"

    def wrong(self, prices, row):  # noqa: ANN001, ANN201
        if row.get("direction") == "read" and row.get("place") is None and row.get("cost_usd"):
            return 0.0
        return None


# --- USAGE-1.b ---------------------------------------------------------------------------


@mutant
class NoPlaceReadsLocal(UsageMutant):
    """Reads through URLs given to a reader without a place are counted on route
    ``local`` (free), not ``cross_cloud`` as the contract bills an unknown place."""

    name = "usage-reads-without-a-place-counted-local"
    clause = "USAGE-1.b"
    summary = "bytes read by a reader without a place are counted (and priced) as local"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = [r for r in body["transfers"] if r.get("direction") == "read"
                and r.get("place") is None and r.get("route") != "local"]
        for r in rows:
            r["route"], r["cost_usd"] = "local", 0.0
        return retotal(body) if rows else None


# --- USAGE-1.d ---------------------------------------------------------------------------


@mutant
class ReadRowPerReply(ServedBytes):
    """Reads of one version by one place show one row per reply that handed out the URLs
    (two ``versions/read?urls=1`` of the same version from the same place: two rows)."""

    name = "usage-read-row-per-reply-that-gave-the-urls"
    clause = "USAGE-1.d"
    summary = "reads of one version by one place through two replies' URLs are two rows"

    def remember(self, request: Request, resp: Response) -> None:
        before = set(self.urls)
        super().remember(request, resp)
        with self.lock:
            batch = self.state["batches"] = self.state.get("batches", 0) + 1
            for key in set(self.urls) - before:
                self.urls[key]["batch"] = batch

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        if request.method == "GET" and resp.status in (200, 206) and info.get("batch"):
            key = (info["artifact"], info["version"], lower_place(info["place"]),
                   info["route"] or "cross_cloud")
            with self.lock:
                per = self.state.setdefault("per", defaultdict(lambda: defaultdict(int)))
                per[key][info["batch"]] += len(resp.body)
        return 0

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            per = {k: dict(v) for k, v in self.state.get("per", {}).items()}
        rows: list[Row] = []
        touched = False
        prices = body.get("prices") or {}
        for row in body["transfers"]:
            key = (row.get("artifact"), row.get("version"), place_text(row.get("place")),
                   row.get("route"))
            parts = [n for n in (per.get(key) or {}).values() if n]
            if row.get("direction") != "read" or len(parts) < 2 or sum(parts) != row["bytes"]:
                rows.append(row)
                continue
            rows += [dict(row, bytes=n, cost_usd=n * rate(prices, row)) for n in parts]
            touched = True
        body["transfers"] = rows
        return retotal(body) if touched else None


@mutant
class WriteRowPerWriteCall(ServedBytes):
    """The bytes of one version written through several ``versions/write`` calls into one
    upload (VER-5: the ranks of one job) show one write row per call, not one row."""

    name = "usage-write-row-per-write-call-into-one-upload"
    clause = "USAGE-1.d"
    summary = "a version whose upload was joined by a second write shows two write rows"

    def remember(self, request: Request, resp: Response) -> None:
        before = set(self.urls)
        super().remember(request, resp)
        if request.endpoint != "versions/write":
            return
        with self.lock:
            call = self.state["calls"] = self.state.get("calls", 0) + 1
            for key in set(self.urls) - before:
                self.urls[key]["call"] = call

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = super().forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "PUT" and info.get("call") and resp.ok:
            with self.lock:
                per = self.state.setdefault("puts", {}).setdefault(
                    (info["artifact"], info["version"]), {})
                per.setdefault(info["call"], {})[info["name"]] = len(request.body)
        return resp

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            puts = {k: {c: sum(f.values()) for c, f in v.items()}
                    for k, v in self.state.get("puts", {}).items()}
        rows: list[Row] = []
        touched = False
        prices = body.get("prices") or {}
        for row in body["transfers"]:
            parts = [n for n in (puts.get((row.get("artifact"), row.get("version"))) or {})
                     .values() if n]
            if row.get("direction") != "write" or len(parts) < 2 or sum(parts) != row["bytes"]:
                rows.append(row)
                continue
            rows += [dict(row, bytes=n, cost_usd=n * rate(prices, row)) for n in parts]
            touched = True
        body["transfers"] = rows
        return retotal(body) if touched else None


# --- USAGE-1.e ---------------------------------------------------------------------------


class _Placements(UsageMutant):
    """Rewrites each placements row with :meth:`fix` (None: unchanged)."""

    def fix(self, row: dict) -> dict | None:
        return None

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows, touched = [], False
        for p in body.get("placements") or []:
            new = self.fix(p) if isinstance(p, dict) else None
            rows.append(p if new is None else new)
            touched = touched or new is not None
        return dict(body, placements=rows) if touched else None


@mutant
class DefaultPlacementRouteCrossCloud(_Placements):
    """A ``default`` placements row says route ``cross_cloud`` (any write away from the
    box is called cross-cloud)."""

    name = "usage-default-placement-route-cross-cloud"
    clause = "USAGE-1.e"
    summary = "placements rows of kind default say route cross_cloud instead of inter_region"

    def fix(self, row: dict) -> dict | None:
        if row.get("kind") == "default" and row.get("route") == "inter_region":
            return dict(row, route="cross_cloud")
        return None


@mutant
class PlacementLocationIsBox(_Placements):
    """A ``default`` placements row names the box's place as its ``location``."""

    name = "usage-default-placement-location-is-the-box-place"
    clause = "USAGE-1.e"
    summary = "placements rows of kind default give the box's place as location"

    def fix(self, row: dict) -> dict | None:
        place = row.get("place")
        if row.get("kind") == "default" and isinstance(place, dict) \
                and row.get("location") != place:
            return dict(row, location={"cloud": _cloud(place), "region": place.get("region")})
        return None


@mutant
class UnknownCloudPlacementDefault(_Placements):
    """A placements row of a box in a cloud outside the table says kind ``default`` (the
    fallback is taken as the 'other' cloud's default)."""

    name = "usage-unknown-cloud-placement-kind-default"
    clause = "USAGE-1.e"
    summary = "placements of a box in an unknown cloud say kind default instead of fallback"

    def fix(self, row: dict) -> dict | None:
        place = row.get("place")
        if row.get("kind") == "fallback" and isinstance(place, dict) \
                and _cloud(place) not in KNOWN:
            return dict(row, kind="default")
        return None


# --- XC-1 --------------------------------------------------------------------------------


@mutant
class ReadRouteCaseSensitive(ReplyMutant):
    """A read's ``route`` compares the reader's cloud as spelled: ``GCP/us-central1``
    reading a gcp version is told ``cross_cloud`` (the ``cross_cloud`` flag is right)."""

    name = "xc-read-route-compares-cloud-as-spelled"
    clause = "XC-1.b"
    summary = "a read from GCP/<other region> of a gcp version says route cross_cloud"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        if place and str(place.get("cloud")) != _cloud(place) \
                and body.get("route") == "inter_region":
            return {**body, "route": "cross_cloud"}
        return None


@mutant
class UnknownReaderNotCrossCloud(ReplyMutant):
    """A reader in a cloud outside the table is told ``cross_cloud: false`` (the flag is
    only set between two known clouds); its route is right."""

    name = "xc-reader-in-unknown-cloud-not-marked-cross-cloud"
    clause = "XC-1.a"
    summary = "a read from oracle/x says cross_cloud false though the clouds differ"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        if place and _cloud(place) not in KNOWN and body.get("cross_cloud") is True:
            return {**body, "cross_cloud": False}
        return None


