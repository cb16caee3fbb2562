"""Mutants of USAGE-1.d-e: transfer rows (one per version, place and route) and placements.

Like those of :mod:`conformance.mutants.m_usage`, each rewrites ``usage/read`` replies and
keeps costs, routes and the total consistent with the rows it changes.
"""

from __future__ import annotations

from collections import defaultdict

from conformance.mutants.base import Request, Upstream, mutant
from conformance.mutants.m_read import api_call, obj
from conformance.mutants.usage_replies import (
    Row,
    ServedBytes,
    UsageMutant,
    lower_place,
    place_text,
)

# --- USAGE-1.d ---------------------------------------------------------------------------


@mutant
class WriteRowPerFile(UsageMutant):
    """A version of 3 or more files gets one write row per file instead of one."""

    name = "usage-write-row-per-file-when-3-files"
    clause = "USAGE-1.d"
    summary = "writes of a 3-file version appear as 3 transfer rows"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        out, touched = [], False
        for row in body["transfers"]:
            sizes = self._sizes(request, upstream, row) if row.get("direction") == "write" else []
            if len(sizes) < 3 or sum(sizes) != row["bytes"]:
                out.append(row)
                continue
            touched = True
            out += [{**row, "bytes": s, "cost_usd": row["cost_usd"] * s / row["bytes"]}
                    for s in sizes]
        return {**body, "transfers": out} if touched else None

    @staticmethod
    def _sizes(request: Request, upstream: Upstream, row: Row) -> list[int]:
        read = api_call(upstream, request, "GET", "versions/read",
                        {"artifact": row.get("artifact"), "version": row.get("version")})
        files = obj(read).get("files") if read.ok else None
        return [int(f.get("size") or 0) for f in files or []]


@mutant
class ReadRowsBySpelling(ServedBytes):
    """Read rows are keyed by the place as the reader spelled it: reads from ``GCP/x`` and
    ``gcp/x`` of one version make two rows."""

    name = "usage-read-rows-split-by-place-spelling"
    clause = "USAGE-1.d"
    summary = "reads from GCP/r and gcp/r of one version appear as two rows"

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        place = info["place"] or ""
        if resp.status in (200, 206) and request.method == "GET" and place != place.lower():
            with self.lock:
                spelled = self.state.setdefault("spelled", defaultdict(int))
                spelled[(info["artifact"], info["version"], place, info["route"])] += len(
                    resp.body)
        return 0

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            spelled = dict(self.state.get("spelled", {}))
        extra = []
        for row in body["transfers"]:
            for (artifact, version, place, route), n in spelled.items():
                if row.get("direction") == "read" and (row.get("artifact"), row.get(
                        "version"), place_text(row.get("place")), row.get("route")) == (
                        artifact, version, lower_place(place), route) and 0 < n < row["bytes"]:
                    cloud, _, region = place.partition("/")
                    per = row["cost_usd"] / row["bytes"]
                    extra.append({**row, "place": {"cloud": cloud, "region": region},
                                  "bytes": n, "cost_usd": n * per})
                    row["bytes"] -= n
                    row["cost_usd"] = row["bytes"] * per
        return {**body, "transfers": body["transfers"] + extra} if extra else None


@mutant
class ReadRowsMergeVersions(UsageMutant):
    """Reads of different versions by one place on one route are summed into one row,
    labelled with the newest version."""

    name = "usage-read-rows-of-two-versions-merged"
    clause = "USAGE-1.d"
    summary = "reads of two versions from one place appear as one row of the newest"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        groups: dict[tuple, list[Row]] = defaultdict(list)
        out = []
        for row in body["transfers"]:
            if row.get("direction") != "read":
                out.append(row)
                continue
            groups[(row.get("artifact"), place_text(row.get("place")), row.get("route"))].append(
                row)
        touched = False
        for rows in groups.values():
            newest = max(rows, key=lambda r: str(r.get("version")))
            if len(rows) > 1:
                touched = True
            out.append({**newest, "bytes": sum(r["bytes"] for r in rows),
                        "cost_usd": sum(r["cost_usd"] for r in rows)})
        return {**body, "transfers": out} if touched else None


# --- USAGE-1.e ---------------------------------------------------------------------------


class PlacementsMutant(UsageMutant):
    """Rewrites the ``placements`` rows of usage replies with :meth:`placements`."""

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = self.placements(body.get("placements") or [])
        return None if rows is None else {**body, "placements": rows}

    def placements(self, rows: list[Row]) -> list[Row] | None:
        return None


@mutant
class PlacementsSkipNullPlace(PlacementsMutant):
    """Boxes that opened without a place are missing from ``placements``."""

    name = "usage-placements-skip-boxes-without-place"
    clause = "USAGE-1.e"
    summary = "fallback writes of boxes with place null are not listed in placements"

    def placements(self, rows: list[Row]) -> list[Row] | None:
        kept = [p for p in rows if p.get("place") is not None]
        return kept if len(kept) != len(rows) else None


@mutant
class PlacementVersionsOffByOne(PlacementsMutant):
    """A placement row of 3 or more versions counts one version fewer."""

    name = "usage-placement-versions-one-short-from-3"
    clause = "USAGE-1.e"
    summary = "a placement row with 3+ versions reports one version fewer"

    def placements(self, rows: list[Row]) -> list[Row] | None:
        if not any(int(p.get("versions") or 0) >= 3 for p in rows):
            return None
        return [{**p, "versions": p["versions"] - 1} if int(p.get("versions") or 0) >= 3
                else p for p in rows]
