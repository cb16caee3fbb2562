"""Mutants of USAGE-1.c and USAGE-1.f: what bytes cost and the prices a report publishes;
one row each (rows.py), bending ``usage/read`` reports (usage_replies.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.mutants.m_place import KNOWN
from conformance.mutants.m_place import cloud_of
from conformance.mutants.rows import Bend
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.usage_replies import USAGE
from conformance.mutants.usage_replies import Row as UsageRow
from conformance.mutants.usage_replies import leaves
from conformance.mutants.usage_replies import rate
from conformance.mutants.usage_replies import repriced
from conformance.mutants.usage_replies import retotal
from conformance.mutants.usage_replies import usage

Json = dict[str, Any]


def _gcp_read_by_reader_cloud(prices: Json, row: UsageRow) -> float | None:
    if row.get("direction") != "read" or row.get("route") != "cross_cloud" \
            or (row.get("location") or {}).get("cloud") != "gcp":
        return None
    table = prices.get("cross_cloud") or {}
    reader = str((row.get("place") or {}).get("cloud", "other"))
    return float(table.get(reader, table.get("other", 0.0)))


def _total_without_inter_region(body: Json, turn: Turn) -> Json | None:
    routes = body.get("routes") or {}
    inter = float((routes.get("inter_region") or {}).get("cost_usd") or 0)
    if inter and float((routes.get("cross_cloud") or {}).get("cost_usd") or 0):
        return {**body, "total_cost_usd": body["total_cost_usd"] - inter}
    return None


def _total_without_writes(body: Json, turn: Turn) -> Json | None:
    writes = sum(r.get("cost_usd") or 0 for r in body["transfers"]
                 if r.get("direction") == "write")
    return {**body, "total_cost_usd": body.get("total_cost_usd", 0) - writes} if writes \
        else None


def _costs_changed(cost: Callable[[Json, UsageRow], float]) -> Bend:
    """A report whose rows that cost anything cost ``cost(prices, row)`` instead."""

    def change(body: Json, turn: Turn) -> Json | None:
        costly = [r for r in body["transfers"] if r.get("cost_usd")]
        for r in costly:
            r["cost_usd"] = cost(body.get("prices") or {}, r)
        return retotal(body) if costly else None

    return usage(change)


def _azure_inter_region_at_egress(body: Json, turn: Turn) -> Json | None:
    hits = [r for r in body["transfers"] if r.get("route") == "inter_region"
            and leaves(r) == "azure" and r.get("bytes")]
    for r in hits:
        r["cost_usd"] = r["bytes"] * rate(body.get("prices") or {}, r, "cross_cloud")
    return retotal(body) if hits else None


def _azure_egress_published_at_0_09(body: Json, turn: Turn) -> Json | None:
    prices = body.get("prices")
    if not isinstance(prices, dict) or not isinstance(prices.get("cross_cloud"), dict):
        return None
    prices["cross_cloud"]["azure"] = 0.09
    for r in body["transfers"]:
        if r.get("route") == "cross_cloud" and leaves(r) == "azure":
            r["cost_usd"] = r["bytes"] * rate(prices, r)
    return retotal(body)


def _azure_inter_region_published_at_0_087(body: Json, turn: Turn) -> Json | None:
    prices = body.get("prices")
    if not isinstance(prices, dict):
        return None
    inter = prices.get("inter_region")
    if isinstance(inter, dict):
        inter = {**inter, "azure": 0.087}
    elif isinstance(inter, int | float):
        inter = {"aws": inter, "gcp": inter, "azure": 0.087}
    else:
        return None
    return {**body, "prices": {**prices, "inter_region": inter}}


def _read(row: UsageRow, route: str, location: str) -> bool:
    return row.get("direction") == "read" and row.get("route") == route \
        and cloud_of(row.get("location")) == location


rows(
    Row("usage-azure-egress-priced-at-0.09", "USAGE-1.c",
        "cross-cloud bytes leaving azure cost 0.09/GB instead of 0.087",
        USAGE, answer=repriced(lambda prices, row: 0.09 if row.get("route") == "cross_cloud"
                               and leaves(row) == "azure" else None)),
    Row("usage-gcp-egress-priced-by-reader-cloud", "USAGE-1.c",
        "a cross-cloud read of a gcp version is priced at the reader cloud's rate",
        USAGE, answer=repriced(_gcp_read_by_reader_cloud)),
    Row("usage-total-omits-inter-region-when-cross-cloud-costs", "USAGE-1.c",
        "total_cost_usd skips inter_region cost when cross_cloud cost is also non-zero",
        USAGE, answer=usage(_total_without_inter_region)),
    Row("usage-azure-inter-region-priced-as-egress", "USAGE-1.c",
        "inter_region bytes leaving azure cost 0.087/GB instead of 0.02",
        USAGE, answer=usage(_azure_inter_region_at_egress)),
    Row("usage-costs-rounded-to-cents", "USAGE-1.c",
        "each row's cost_usd is rounded to cents (a few MB cross-cloud cost $0)",
        USAGE, answer=_costs_changed(lambda prices, r: round(r["cost_usd"], 2))),
    Row("usage-total-omits-write-cost", "USAGE-1.c", "total_cost_usd leaves out what writes cost",
        USAGE, answer=usage(_total_without_writes)),
    # The reply is consistent with itself, but not with the contract's table (0.087).
    Row("usage-azure-egress-published-and-charged-at-0.09", "USAGE-1.c",
        "usage publishes azure egress at 0.09/GB and prices rows by it (table: 0.087)",
        USAGE, answer=usage(_azure_egress_published_at_0_09)),
    Row("usage-priced-per-gib-not-per-gb", "USAGE-1.c",
        "every row costs bytes / 2**30 * price (GiB), about 7% too little",
        USAGE, answer=_costs_changed(lambda prices, r: r["bytes"] * rate(prices, r)
                                     * 1e9 / 2**30)),
    Row("usage-gcp-inter-region-reads-priced-as-egress", "USAGE-1.c",
        "reading a gcp version from another gcp region costs 0.12/GB instead of 0.02",
        USAGE, answer=repriced(lambda prices, row: 0.12 if _read(row, "inter_region", "gcp")
                               else None)),
    Row("usage-aws-version-read-from-azure-priced-at-azure-rate", "USAGE-1.c",
        "an azure box reading an aws version pays 0.087/GB instead of 0.09",
        USAGE, answer=repriced(lambda prices, row: 0.087 if _read(row, "cross_cloud", "aws")
                               and cloud_of(row.get("place")) == "azure" else None)),
    # Its cloud has no entry, and the lookup's default is 0 instead of 'any other'.
    Row("usage-writes-from-an-unknown-cloud-priced-0", "USAGE-1.c",
        "bytes written by a box in oracle/x (to the fallback) cost $0 instead of 0.09/GB",
        USAGE, answer=repriced(lambda prices, row: 0.0 if row.get("direction") == "write"
                               and isinstance(row.get("place"), dict)
                               and cloud_of(row.get("place")) not in KNOWN
                               and row.get("cost_usd") else None)),
    Row("usage-reads-without-a-place-priced-0", "USAGE-1.c",
        "cross_cloud reads by a reader without a place cost $0",
        USAGE, answer=repriced(lambda prices, row: 0.0 if row.get("direction") == "read"
                               and row.get("place") is None and row.get("cost_usd")
                               else None)),
    # As if the bytes left the reader's cloud.
    Row("usage-reader-in-unknown-cloud-priced-as-other", "USAGE-1.c",
        "a read from an unknown cloud is priced 0.09/GB ('other'), not by the "
        "location's cloud",
        USAGE, answer=repriced(lambda prices, row: 0.09 if row.get("direction") == "read"
                               and row.get("route") == "cross_cloud"
                               and (row.get("place") or {}).get("cloud")
                               and cloud_of(row.get("place")) not in KNOWN else None)),
    # Rows are still charged by the table.
    Row("usage-prices-publish-azure-inter-region-at-0.087", "USAGE-1.f",
        "usage's prices show inter_region azure 0.087 (table: 0.02 in every cloud)",
        USAGE, answer=usage(_azure_inter_region_published_at_0_087)),
)
