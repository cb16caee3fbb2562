"""Mutants of USAGE-1.a-c: bytes per route, bytes served, prices.

Each rewrites ``usage/read`` replies and keeps them self-consistent where the clause it
breaks allows (see :mod:`conformance.mutants.usage_replies`); rows and placements are in
:mod:`conformance.mutants.m_usage_rows`.
"""

from __future__ import annotations

from collections import defaultdict

from conformance.mutants.base import mutant
from conformance.mutants.m_read import parse_range
from conformance.mutants.usage_replies import (  # noqa: F401  (importable from here as before)
    Row,
    ServedBytes,
    UsageMutant,
    leaves,
    rate,
    retotal,
)

# --- USAGE-1.a ---------------------------------------------------------------------------


@mutant
class WriteBytesMissLatest(UsageMutant):
    """Once an artifact has write rows of 2 or more versions, the routes' ``write_bytes``
    leave out the newest version (rows and costs are right)."""

    name = "usage-write-bytes-miss-newest-version-when-2-versions"
    clause = "USAGE-1.a"
    summary = "route write_bytes omit the newest version once two versions were written"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        writes: dict[str, list[Row]] = defaultdict(list)
        for row in body["transfers"]:
            if row.get("direction") == "write":
                writes[row.get("artifact")].append(row)
        touched = False
        for rows in writes.values():
            if len({r.get("version") for r in rows}) < 2:
                continue
            newest = max(r.get("version") for r in rows)
            for r in rows:
                if r.get("version") == newest:
                    body["routes"][r["route"]]["write_bytes"] -= r["bytes"]
                    touched = True
        return body if touched else None


@mutant
class GcpInterRegionWritesLocal(UsageMutant):
    """Writes of gcp boxes to gcp's default location from another region are counted (and
    priced) as ``local``."""

    name = "usage-gcp-inter-region-writes-counted-local"
    clause = "USAGE-1.a"
    summary = "bytes a gcp box writes to another gcp region are counted as local"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        hits = [r for r in body["transfers"] if r.get("direction") == "write"
                and r.get("route") == "inter_region"
                and (r.get("location") or {}).get("cloud") == "gcp"]
        for r in hits:
            r["route"], r["cost_usd"] = "local", 0.0
        return retotal(body) if hits else None



# --- USAGE-1.b ---------------------------------------------------------------------------


@mutant
class RangedReadOneShort(ServedBytes):
    """Each ranged GET is metered as ``b - a`` bytes, one fewer than it sent."""

    name = "usage-ranged-read-metered-one-byte-short"
    clause = "USAGE-1.b"
    summary = "every ranged GET counts one byte less than it served"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        return -1 if resp.status == 206 and request.method == "GET" else 0


@mutant
class OverlongRangeMeteredAsAsked(ServedBytes):
    """A range running past the end is metered as asked, not as sent."""

    name = "usage-overlong-range-metered-as-requested"
    clause = "USAGE-1.b"
    summary = "bytes=a-b past the end counts b-a+1 bytes though fewer were sent"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        raw = (request.header("Range") or "").removeprefix("bytes=").partition("-")
        if resp.status != 206 or not (raw[0].isdigit() and raw[2].isdigit()):
            return 0
        return max(0, int(raw[2]) - int(raw[0]) + 1 - len(resp.body))


@mutant
class HeadMeteredAsRead(ServedBytes):
    """A HEAD is metered as if the whole file had been sent."""

    name = "usage-head-metered-as-full-read"
    clause = "USAGE-1.b"
    summary = "a HEAD of a signed URL counts the file's size as read bytes"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        if request.method != "HEAD" or resp.status not in (200, 206):
            return 0
        span = parse_range(request.header("Range"), info["size"])
        return span[1] - span[0] + 1 if isinstance(span, tuple) else info["size"]


# --- USAGE-1.c ---------------------------------------------------------------------------


class Repriced(UsageMutant):
    """Rows that ``wrong`` prices at another rate; routes and total follow the rows."""

    def wrong(self, prices: dict, row: Row) -> float | None:
        return None

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        touched = False
        for row in body["transfers"]:
            per_gb = self.wrong(body.get("prices") or {}, row)
            if per_gb is not None:
                row["cost_usd"], touched = row["bytes"] * per_gb / 1e9, True
        return retotal(body) if touched else None


@mutant
class AzureAtAwsRate(Repriced):
    """Cross-cloud bytes leaving azure are priced 0.09 (the aws and 'other' rate), not 0.087."""

    name = "usage-azure-egress-priced-at-0.09"
    clause = "USAGE-1.c"
    summary = "cross-cloud bytes leaving azure cost 0.09/GB instead of 0.087"

    def wrong(self, prices, row):  # noqa: ANN001, ANN201
        if row.get("route") == "cross_cloud" and leaves(row) == "azure":
            return 0.09
        return None


@mutant
class GcpReadsByReaderCloud(Repriced):
    """Cross-cloud reads of gcp versions are priced by the reader's cloud, not gcp's."""

    name = "usage-gcp-egress-priced-by-reader-cloud"
    clause = "USAGE-1.c"
    summary = "a cross-cloud read of a gcp version is priced at the reader cloud's rate"

    def wrong(self, prices, row):  # noqa: ANN001, ANN201
        if row.get("direction") != "read" or row.get("route") != "cross_cloud" \
                or (row.get("location") or {}).get("cloud") != "gcp":
            return None
        table = prices.get("cross_cloud") or {}
        reader = str((row.get("place") or {}).get("cloud", "other"))
        return float(table.get(reader, table.get("other", 0.0)))


@mutant
class TotalWithoutInterRegion(UsageMutant):
    """``total_cost_usd`` leaves out the inter-region route when other routes cost too."""

    name = "usage-total-omits-inter-region-when-cross-cloud-costs"
    clause = "USAGE-1.c"
    summary = "total_cost_usd skips inter_region cost when cross_cloud cost is also non-zero"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        routes = body.get("routes") or {}
        inter = float((routes.get("inter_region") or {}).get("cost_usd") or 0)
        if inter and float((routes.get("cross_cloud") or {}).get("cost_usd") or 0):
            return {**body, "total_cost_usd": body["total_cost_usd"] - inter}
        return None
