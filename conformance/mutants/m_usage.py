"""Mutants of USAGE-1: bytes per route, prices, transfer rows and placements.

Each rewrites ``usage/read`` replies and keeps them self-consistent where the clause it
breaks allows: a row's cost follows its bytes and route, routes and the total follow rows.
Mutants about reads watch the data plane (:class:`Watching`) to know what was served.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.mutants.base import Mutant, Request, Response, Upstream, mutant
from conformance.mutants.m_read import Watching, api_call, obj, parse_range

Row = dict[str, Any]


def _place_text(place: Any) -> str | None:
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
                key = (info["artifact"], info["version"], _lower(info["place"]),
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
            key = (row.get("artifact"), row.get("version"), _place_text(row.get("place")),
                   row.get("route"))
            if row.get("direction") == "read" and extra.get(key):
                row["bytes"] += extra[key]
                row["cost_usd"] = row["bytes"] * rate(body.get("prices") or {}, row)
                touched = True
        return retotal(body) if touched else None


def _lower(place: str | None) -> str | None:
    if not place:
        return None
    cloud, _, region = place.partition("/")
    return f"{cloud.lower()}/{region}"


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
                        "version"), _place_text(row.get("place")), row.get("route")) == (
                        artifact, version, _lower(place), route) and 0 < n < row["bytes"]:
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
            groups[(row.get("artifact"), _place_text(row.get("place")), row.get("route"))].append(
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


@mutant
class PlacementsSkipNullPlace(UsageMutant):
    """Boxes that opened without a place are missing from ``placements``."""

    name = "usage-placements-skip-boxes-without-place"
    clause = "USAGE-1.e"
    summary = "fallback writes of boxes with place null are not listed in placements"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = body.get("placements") or []
        kept = [p for p in rows if p.get("place") is not None]
        return {**body, "placements": kept} if len(kept) != len(rows) else None


@mutant
class PlacementVersionsOffByOne(UsageMutant):
    """A placement row of 3 or more versions counts one version fewer."""

    name = "usage-placement-versions-one-short-from-3"
    clause = "USAGE-1.e"
    summary = "a placement row with 3+ versions reports one version fewer"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = body.get("placements") or []
        if not any(int(p.get("versions") or 0) >= 3 for p in rows):
            return None
        fixed = [{**p, "versions": p["versions"] - 1} if int(p.get("versions") or 0) >= 3
                 else p for p in rows]
        return {**body, "placements": fixed}
