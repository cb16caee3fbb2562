"""Subtler mutants of USAGE-1, PLACE-* and XC-1: metering, pricing and routes right in the
common case and wrong only for a 416, the last byte of a file, azure's inter-region price,
cost rounded to cents, several ranged GETs, readers in two places, azure placements, an
unknown cloud whose region matches a location, a box without a holder, or a fork."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.mutants.base import mutant
from conformance.mutants.m_place import ReplyMutant, place_of
from conformance.mutants.m_read import obj, parse_range
from conformance.mutants.m_usage import ServedBytes, UsageMutant, leaves, rate, retotal
from conformance.mutants.usage_replies import lower_place

KNOWN = {"aws", "gcp", "azure"}


# --- USAGE-1.b ---------------------------------------------------------------------------


@mutant
class UnsatisfiableMetered(ServedBytes):
    """A 416 is metered as a read of the error body it sent."""

    name = "usage-416-metered-as-its-error-body"
    clause = "USAGE-1.b"
    summary = "a 416 reply counts the bytes of its error body as read"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        return len(resp.body) if resp.status == 416 else 0


@mutant
class LastByteNotMetered(ServedBytes):
    """A ranged GET that ends on the file's last byte is metered one byte short (the meter
    clamps the end to ``size - 1`` and then subtracts again)."""

    name = "usage-range-ending-at-last-byte-metered-one-short"
    clause = "USAGE-1.b"
    summary = "a ranged GET ending on the last byte of the file counts one byte less"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        span = parse_range(request.header("Range"), int(info["size"]))
        if resp.status == 206 and isinstance(span, tuple) and span[1] == info["size"] - 1:
            return -1
        return 0


# --- USAGE-1.c ---------------------------------------------------------------------------


@mutant
class AzureInterRegionAtEgress(UsageMutant):
    """Inter-region bytes leaving azure are priced at azure's cross-cloud rate."""

    name = "usage-azure-inter-region-priced-as-egress"
    clause = "USAGE-1.c"
    summary = "inter_region bytes leaving azure cost 0.087/GB instead of 0.02"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        hits = [r for r in body["transfers"] if r.get("route") == "inter_region"
                and leaves(r) == "azure" and r.get("bytes")]
        for r in hits:
            r["cost_usd"] = r["bytes"] * rate(body.get("prices") or {}, r, "cross_cloud")
        return retotal(body) if hits else None


@mutant
class CostRoundedToCents(UsageMutant):
    """Every cost is rounded to whole cents, so small transfers cost nothing."""

    name = "usage-costs-rounded-to-cents"
    clause = "USAGE-1.c"
    summary = "each row's cost_usd is rounded to cents (a few MB cross-cloud cost $0)"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = [r for r in body["transfers"] if r.get("cost_usd")]
        for r in rows:
            r["cost_usd"] = round(r["cost_usd"], 2)
        return retotal(body) if rows else None


@mutant
class TotalOmitsWrites(UsageMutant):
    """``total_cost_usd`` sums the cost of reads only."""

    name = "usage-total-omits-write-cost"
    clause = "USAGE-1.c"
    summary = "total_cost_usd leaves out what writes cost"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        writes = sum(r.get("cost_usd") or 0 for r in body["transfers"]
                     if r.get("direction") == "write")
        if not writes:
            return None
        body["total_cost_usd"] = body.get("total_cost_usd", 0) - writes
        return body


# --- USAGE-1.d ---------------------------------------------------------------------------


@mutant
class RowPerRangedGet(ServedBytes):
    """Reads of one version by one place made of several ranged GETs show as one row per
    GET (single GETs show as one row, as they should)."""

    name = "usage-read-row-per-ranged-get"
    clause = "USAGE-1.d"
    summary = "eight ranged GETs of one checkpoint by one box show as eight rows"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        if resp.status == 206 and request.method == "GET":
            key = (info["artifact"], info["version"], lower_place(info["place"]))
            with self.lock:
                self.state.setdefault("gets", defaultdict(list))[key].append(len(resp.body))
        return 0

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            gets = {k: list(v) for k, v in self.state.get("gets", {}).items()}
        rows, touched = [], False
        prices = body.get("prices") or {}
        for row in body["transfers"]:
            key = (row.get("artifact"), row.get("version"), _place_place(row.get("place")))
            parts = gets.get(key) or []
            if row.get("direction") != "read" or len(parts) < 2 or sum(parts) > row["bytes"]:
                rows.append(row)
                continue
            rest = row["bytes"] - sum(parts)
            sizes = parts[:-1] + [parts[-1] + rest]
            rows += [dict(row, bytes=n, cost_usd=n * rate(prices, row)) for n in sizes]
            touched = True
        body["transfers"] = rows
        return retotal(body) if touched else None


def _place_place(place: Any) -> str | None:
    if not isinstance(place, dict):
        return None
    return f"{str(place.get('cloud')).lower()}/{place.get('region')}"


@mutant
class ReadRowsOfTwoPlacesMerged(UsageMutant):
    """Reads of one version on one route from two places show as one row, under the place
    listed first."""

    name = "usage-read-rows-of-two-places-merged"
    clause = "USAGE-1.d"
    summary = "reads of one version on one route from two places appear as one row"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows, seen, touched = [], {}, False
        for row in body["transfers"]:
            key = (row.get("direction"), row.get("artifact"), row.get("version"),
                   row.get("route"))
            if row.get("direction") == "read" and key in seen:
                first = seen[key]
                first["bytes"] += row["bytes"]
                first["cost_usd"] += row["cost_usd"]
                touched = True
                continue
            seen[key] = row
            rows.append(row)
        body["transfers"] = rows
        return retotal(body) if touched else None


# --- USAGE-1.e ---------------------------------------------------------------------------


@mutant
class AzureDefaultPlacementDropped(UsageMutant):
    """``placements`` leaves out default-location rows of azure boxes."""

    name = "usage-placements-omit-azure-default-rows"
    clause = "USAGE-1.e"
    summary = "placements has no default row for writes of azure boxes in another region"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = body.get("placements") or []
        kept = [p for p in rows if not (p.get("kind") == "default"
                                        and str((p.get("place") or {}).get("cloud")).lower()
                                        == "azure")]
        return dict(body, placements=kept) if len(kept) != len(rows) else None


@mutant
class PlacementBytesFirstVersion(UsageMutant):
    """A placement row with two or more versions reports the bytes of its first only."""

    name = "usage-placement-bytes-of-first-version-only"
    clause = "USAGE-1.e"
    summary = "a placement row's bytes stop growing after its first version"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        touched = False
        for p in body.get("placements") or []:
            versions = p.get("versions")
            count = len(versions) if isinstance(versions, list) else versions
            if isinstance(count, int) and count >= 2:
                first = [r for r in body["transfers"] if r.get("direction") == "write"
                         and r.get("location") == p.get("location")
                         and _place_place(r.get("place")) == _place_place(p.get("place"))]
                if first:
                    p["bytes"] = min(r["bytes"] for r in first)
                    touched = True
        return body if touched else None


# --- PLACE -------------------------------------------------------------------------------


def _locations(body: dict) -> Any:
    return body.get("write_location") or {}


@mutant
class UnknownCloudMatchedByRegion(ReplyMutant):
    """An unknown cloud in a region that has a location (``oracle/europe-west4``) is told
    it writes to that location (matched by region), route ``cross_cloud``."""

    name = "place-unknown-cloud-matched-by-region-name"
    clause = "PLACE-3.a"
    summary = "a box at oracle/<a location's region> is sent to that location, not the fallback"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        if not place or str(place.get("cloud")).lower() in KNOWN:
            return None
        homes = {"europe-west4": "gcp", "westeurope": "azure", "us-east-1": "aws"}
        cloud = homes.get(str(place.get("region")))
        if cloud is None or cloud == _locations(body).get("cloud"):
            return None
        return {**body, "write_location": {**_locations(body), "cloud": cloud,
                                           "region": place.get("region")}}


@mutant
class FallbackWarningNamesBox(ReplyMutant):
    """The fallback warning of a box in an unknown cloud names the box's own place."""

    name = "place-fallback-warning-names-box-for-unknown-cloud"
    clause = "PLACE-3.b"
    summary = "an unknown cloud's fallback warning names the box's place, not aws/us-east-1"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        loc = _locations(body)
        if not place or str(place.get("cloud")).lower() in KNOWN or not body.get("warnings"):
            return None
        where = f"{loc.get('cloud')}/{loc.get('region')}"
        box = f"{place.get('cloud')}/{place.get('region')}"
        warnings = [str(w).replace(where, box).replace(str(loc.get("region")), "?")
                    for w in body["warnings"]]
        return {**body, "warnings": warnings}


@mutant
class LocalRouteWithoutHolder(ReplyMutant):
    """A local box that gives no holder id is told route ``inter_region``."""

    name = "place-local-route-inter-region-without-holder"
    clause = "PLACE-1.a"
    summary = "an open at a location's own place without a holder says route inter_region"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if "holder" in obj(request) or _locations(body).get("route") != "local":
            return None
        return {**body, "write_location": {**_locations(body), "route": "inter_region"}}


# --- XC-1 --------------------------------------------------------------------------------


@mutant
class ForkResumeNotCrossCloud(ReplyMutant):
    """A fork's ``resume_from`` from another cloud says ``cross_cloud: false``."""

    name = "xc-fork-resume-from-cross-cloud-false"
    clause = "XC-1.a"
    summary = "a fork opened in another cloud than the source version says cross_cloud false"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume, sent = body.get("resume_from"), obj(request).get("resume")
        if isinstance(resume, dict) and resume.get("cross_cloud") is True \
                and isinstance(sent, str) and sent.startswith("o41://"):
            return {**body, "resume_from": {**resume, "cross_cloud": False}}
        return None


@mutant
class AzureInterRegionRouteCrossCloud(ReplyMutant):
    """A read of an azure version from another azure region says route ``cross_cloud``
    (``cross_cloud`` stays false)."""

    name = "xc-route-cross-cloud-for-azure-inter-region-read"
    clause = "XC-1.b"
    summary = "an azure version read from another azure region says route cross_cloud"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if body.get("route") == "inter_region" \
                and (body.get("location") or {}).get("cloud") == "azure":
            return {**body, "route": "cross_cloud"}
        return None


@mutant
class NoPlaceNamedReadLocal(ReplyMutant):
    """A read of a version by name without a place says route ``local``, not null."""

    name = "xc-no-place-named-version-read-reports-local"
    clause = "XC-1.c"
    summary = "reading step-N by name without a place says route local, cross_cloud false"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if request.arg("place") is None and request.arg("version") not in (None, "latest") \
                and body.get("route") is None:
            return {**body, "route": "local", "cross_cloud": False}
        return None




@mutant
class AzureEgressPublishedOffTable(UsageMutant):
    """Azure's cross-cloud price is published AND charged as 0.09/GB: the reply is
    consistent with itself, but not with the contract's table (0.087)."""

    name = "usage-azure-egress-published-and-charged-at-0.09"
    clause = "USAGE-1.c"
    summary = "usage publishes azure egress at 0.09/GB and prices rows by it (table: 0.087)"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        prices = body.get("prices")
        table = prices.get("cross_cloud") if isinstance(prices, dict) else None
        if not isinstance(table, dict):
            return None
        table["azure"] = 0.09
        for r in body["transfers"]:
            if r.get("route") == "cross_cloud" and leaves(r) == "azure":
                r["cost_usd"] = r["bytes"] * rate(prices, r)
        return retotal(body)
