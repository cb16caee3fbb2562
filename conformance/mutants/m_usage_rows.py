"""Mutants of USAGE-1.d-e: transfer rows (one per version, place and route) and placements;
one row each (rows.py). Like those of m_usage.py, each bends ``usage/read`` reports and
keeps costs, routes and the total consistent with the rows it changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.m_place import KNOWN
from conformance.mutants.m_place import cloud_of
from conformance.mutants.m_place import place_of
from conformance.mutants.reads import api_call
from conformance.mutants.reads import obj
from conformance.mutants.reads import url_key
from conformance.mutants.rows import Bend
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.usage_replies import ANY
from conformance.mutants.usage_replies import USAGE
from conformance.mutants.usage_replies import Row as UsageRow
from conformance.mutants.usage_replies import lower_place
from conformance.mutants.usage_replies import place_text
from conformance.mutants.usage_replies import placements
from conformance.mutants.usage_replies import rate
from conformance.mutants.usage_replies import retotal
from conformance.mutants.usage_replies import served
from conformance.mutants.usage_replies import usage

Json = dict[str, Any]
Info = dict[str, Any]

# --- USAGE-1.d: transfer rows -------------------------------------------------------------


def split_rows(direction: str, parts_of: Callable[[Json, UsageRow], list[int]]) -> Bend:
    """A report whose ``direction`` rows are split in the parts ``parts_of`` finds for them
    (the turn's memory read; a row stays whole unless it has 2 or more parts summing to
    its bytes), each part priced."""

    def change(body: Json, turn: Turn) -> Json | None:
        out: list[UsageRow] = []
        touched = False
        prices = body.get("prices") or {}
        for row in body["transfers"]:
            parts = parts_of(body, row) if row.get("direction") == direction else []
            if len(parts) < 2 or sum(parts) != row["bytes"]:
                out.append(row)
                continue
            out += [dict(row, bytes=n, cost_usd=n * rate(prices, row)) for n in parts]
            touched = True
        body["transfers"] = out
        return retotal(body) if touched else None

    return usage(change)


def _file_sizes(turn: Turn) -> Callable[[Json, UsageRow], list[int]]:
    def parts(body: Json, row: UsageRow) -> list[int]:
        read = api_call(turn.upstream, turn.request, "GET", "versions/read",
                        {"artifact": row.get("artifact"), "version": row.get("version")})
        files = obj(read).get("files") if read.ok else None
        sizes = [int(f.get("size") or 0) for f in files or []]
        return sizes if len(sizes) >= 3 else []

    return parts


def _row_per_file(reply: Response, turn: Turn) -> Response:
    return split_rows("write", _file_sizes(turn))(reply, turn)


def _issued(turn: Turn, body: Json) -> list[tuple[str, str]]:
    """The keys of the URLs a reply hands out (as reads.Watching remembers them)."""
    node = body.get("resume_from") if turn.request.endpoint == "artifacts/open" else body
    files = node.get("files") if isinstance(node, dict) else None
    return [url_key(f["url"]) for f in files or [] if isinstance(f, dict) and f.get("url")]


def numbered(endpoints: tuple[str, ...] | None, count: Callable[[Turn, Response, Info, int],
                                                                None], then: Bend) -> Bend:
    """Each reply (of ``endpoints``; None: any) handing out URLs gets the next number, and
    its URLs with it; a data-plane request through one of them is shown to ``count`` with
    that number; every other exchange is bent by ``then``."""

    def note(reply: Response, turn: Turn) -> Response:
        body = reply.json()
        if turn.request.kind == "api" and reply.ok and isinstance(body, dict) \
                and (endpoints is None or turn.request.endpoint in endpoints):
            with turn.lock:
                of = turn.memory.setdefault("numbers", {})
                fresh = [k for k in _issued(turn, body) if k not in of]
                if fresh:
                    n = turn.memory["last"] = turn.memory.get("last", 0) + 1
                    of.update(dict.fromkeys(fresh, n))
        return then(reply, turn)

    def see(turn: Turn, reply: Response, info: Info) -> None:
        with turn.lock:
            n = turn.memory.get("numbers", {}).get(url_key(info["url"]))
        if n is not None:
            count(turn, reply, info, n)

    return served(see, note)


def _read_per_reply(turn: Turn, reply: Response, info: Info, n: int) -> None:
    if info["method"] == "GET" and isinstance(info.get("size"), int) \
            and turn.request.method == "GET" and reply.status in (200, 206):
        key = (info["artifact"], info["version"], lower_place(info["place"]),
               info["route"] or "cross_cloud")
        with turn.lock:
            per = turn.memory.setdefault("per", defaultdict(lambda: defaultdict(int)))
            per[key][n] += len(reply.body)


def _parts_per_reply(turn: Turn) -> Callable[[Json, UsageRow], list[int]]:
    with turn.lock:
        per = {k: dict(v) for k, v in turn.memory.get("per", {}).items()}

    def parts(body: Json, row: UsageRow) -> list[int]:
        key = (row.get("artifact"), row.get("version"), place_text(row.get("place")),
               row.get("route"))
        return [n for n in (per.get(key) or {}).values() if n]

    return parts


def _put_per_call(turn: Turn, reply: Response, info: Info, n: int) -> None:
    if info["method"] == "PUT" and reply.ok:
        with turn.lock:
            per = turn.memory.setdefault("puts", {}).setdefault(
                (info["artifact"], info["version"]), {})
            per.setdefault(n, {})[info["name"]] = len(turn.request.body)


def _parts_per_call(turn: Turn) -> Callable[[Json, UsageRow], list[int]]:
    with turn.lock:
        puts = {k: {c: sum(f.values()) for c, f in v.items()}
                for k, v in turn.memory.get("puts", {}).items()}
    return lambda body, row: [n for n in (puts.get((row.get("artifact"), row.get("version")))
                                          or {}).values() if n]


def _ranged_gets(turn: Turn, reply: Response, info: Info) -> None:
    if info["method"] == "GET" and isinstance(info.get("size"), int) \
            and reply.status == 206 and turn.request.method == "GET":
        key = (info["artifact"], info["version"], lower_place(info["place"]))
        with turn.lock:
            turn.memory.setdefault("gets", defaultdict(list))[key].append(len(reply.body))


def _row_per_ranged_get(body: Json, turn: Turn) -> Json | None:
    with turn.lock:
        gets = {k: list(v) for k, v in turn.memory.get("gets", {}).items()}
    out, touched = [], False
    prices = body.get("prices") or {}
    for row in body["transfers"]:
        parts = gets.get((row.get("artifact"), row.get("version"),
                          place_text(row.get("place")))) or []
        if row.get("direction") != "read" or len(parts) < 2 or sum(parts) > row["bytes"]:
            out.append(row)
            continue
        sizes = parts[:-1] + [parts[-1] + row["bytes"] - sum(parts)]
        out += [dict(row, bytes=n, cost_usd=n * rate(prices, row)) for n in sizes]
        touched = True
    body["transfers"] = out
    return retotal(body) if touched else None


def _spelled_gets(turn: Turn, reply: Response, info: Info) -> None:
    place = info["place"] or ""
    if info["method"] == "GET" and isinstance(info.get("size"), int) \
            and reply.status in (200, 206) and turn.request.method == "GET" \
            and place != place.lower():
        with turn.lock:
            spelled = turn.memory.setdefault("spelled", defaultdict(int))
            spelled[(info["artifact"], info["version"], place, info["route"])] += len(
                reply.body)


def _rows_by_spelling(body: Json, turn: Turn) -> Json | None:
    with turn.lock:
        spelled = dict(turn.memory.get("spelled", {}))
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


def merged(key: Callable[[UsageRow], tuple[Any, ...]],
           into: Callable[[list[UsageRow]], UsageRow]) -> Bend:
    """A report whose read rows of one ``key`` are summed into one, the row ``into``
    picks of them."""

    def change(body: Json, turn: Turn) -> Json | None:
        groups: dict[tuple[Any, ...], list[UsageRow]] = defaultdict(list)
        out = []
        for row in body["transfers"]:
            if row.get("direction") != "read":
                out.append(row)
                continue
            if key(row) not in groups:
                out.append(row)
            groups[key(row)].append(row)
        if all(len(g) < 2 for g in groups.values()):
            return None
        for g in groups.values():
            first = into(g)
            i = out.index(g[0])
            out[i] = {**first, "bytes": sum(r["bytes"] for r in g),
                      "cost_usd": sum(r["cost_usd"] for r in g)}
        return retotal({**body, "transfers": out})

    return usage(change)


# --- USAGE-1.e: placements ----------------------------------------------------------------


def each_placement(fix: Callable[[UsageRow], UsageRow | None]) -> Bend:
    """A report whose placements rows ``fix`` rewrites one by one (None: unchanged)."""

    def rewritten(listed: list[UsageRow]) -> list[UsageRow] | None:
        new = [fix(p) for p in listed]
        if all(n is None for n in new):
            return None
        return [p if n is None else n for p, n in zip(listed, new, strict=True)]

    return placements(rewritten)


def _without(test: Callable[[UsageRow], bool]) -> Callable[[list[UsageRow]],
                                                              list[UsageRow] | None]:
    def kept(listed: list[UsageRow]) -> list[UsageRow] | None:
        out = [p for p in listed if not test(p)]
        return out if len(out) != len(listed) else None

    return kept


def _first_version_bytes(body: Json, turn: Turn) -> Json | None:
    touched = False
    for p in body.get("placements") or []:
        versions = p.get("versions")
        count = len(versions) if isinstance(versions, list) else versions
        if isinstance(count, int) and count >= 2:
            first = [r for r in body["transfers"] if r.get("direction") == "write"
                     and r.get("location") == p.get("location")
                     and place_text(r.get("place")) == place_text(p.get("place"))]
            if first:
                p["bytes"] = min(r["bytes"] for r in first)
                touched = True
    return body if touched else None


def _placement_row_per_relaunch(body: Json, turn: Turn) -> Json | None:
    out: list[UsageRow] = []
    touched = False
    for p in body.get("placements") or []:
        art = p.get("artifact") if isinstance(p, dict) else None
        listed = api_get(turn.upstream, "versions/list", key_of(turn.request),
                         artifact=str(art)) if art else None
        mine = [v for v in ((listed.json() or {}).get("versions") or [])
                if v.get("location") == p.get("location")] if listed and listed.ok else []
        epochs = sorted({v.get("epoch") for v in mine}, key=str)
        if len(epochs) < 2 or len(mine) != p.get("versions") \
                or sum(int(v.get("size") or 0) for v in mine) != p.get("bytes"):
            out.append(p)
            continue
        for e in epochs:
            of = [v for v in mine if v.get("epoch") == e]
            out.append(dict(p, versions=len(of), bytes=sum(int(v["size"]) for v in of)))
        touched = True
    return dict(body, placements=out) if touched else None


def _booked_at_write(reply: Response, turn: Turn) -> Response:
    """Placements of uploads fully written whose commit was refused (fenced, incomplete)
    booked all the same: opens' places and writes' replies noted, refusals booked."""
    request, memory = turn.request, turn.memory
    data = reply.json()
    if request.endpoint == "artifacts/open" and reply.ok and isinstance(data, dict):
        with turn.lock:
            memory.setdefault("places", {})[data.get("token")] = place_of(request)
    elif request.endpoint == "versions/write" and reply.ok and isinstance(data, dict):
        with turn.lock:
            memory.setdefault("writes", {})[str(data.get("upload"))] = data
    elif request.endpoint == "versions/commit" and reply.status == 409 \
            and error_code(reply) in ("fenced", "incomplete"):
        _book(turn)
    elif request.endpoint == "usage/read" and reply.ok and isinstance(data, dict):
        return _shown(reply, data, turn)
    return reply


def _book(turn: Turn) -> None:
    upload = str(body_of(turn.request).get("upload"))
    with turn.lock:
        up = turn.t.uploads.get(upload)
        write = turn.memory.get("writes", {}).get(upload)
        if up is None or write is None or write.get("route") == "local" or not up.complete:
            return
        turn.memory.setdefault("booked", {})[up.upload] = {
            "artifact": up.artifact, "place": turn.memory.get("places", {}).get(up.token),
            "location": write.get("location"), "route": write.get("route"),
            "bytes": sum(map(len, up.puts.values()))}


def _shown(reply: Response, data: Json, turn: Turn) -> Response:
    with turn.lock:
        booked = list(turn.memory.get("booked", {}).values())
    out = [dict(p) for p in data.get("placements") or [] if isinstance(p, dict)]
    touched = False
    for b in booked:
        if not isinstance(b["place"], dict):
            continue
        same = [p for p in out if p.get("artifact", b["artifact"]) == b["artifact"]
                and cloud_of(p.get("place")) == cloud_of(b["place"])
                and (p.get("place") or {}).get("region") == b["place"].get("region")]
        if not same:
            if not any(r.get("artifact") == b["artifact"] for r in data.get("transfers") or []):
                continue  # not this report's artifact
            kind = "default" if b["route"] == "inter_region" else "fallback"
            out.append({"kind": kind, "place": b["place"], "location": b["location"],
                        "route": b["route"], "artifact": b["artifact"], "versions": 0,
                        "bytes": 0})
            same = out[-1:]
        same[0]["versions"] = int(same[0].get("versions") or 0) + 1
        same[0]["bytes"] = int(same[0].get("bytes") or 0) + b["bytes"]
        touched = True
    return reply.with_json(dict(data, placements=out)) if touched else reply


def _default_kind(p: UsageRow) -> bool:
    return p.get("kind") == "default"


rows(
    # --- USAGE-1.d
    Row("usage-write-row-per-file-when-3-files", "USAGE-1.d",
        "writes of a 3-file version appear as 3 transfer rows",
        USAGE, answer=_row_per_file),
    Row("usage-read-rows-split-by-place-spelling", "USAGE-1.d",
        "reads from GCP/r and gcp/r of one version appear as two rows",
        ANY, answer=served(_spelled_gets, usage(_rows_by_spelling)), watched=True),
    Row("usage-read-rows-of-two-versions-merged", "USAGE-1.d",
        "reads of two versions from one place appear as one row of the newest",
        USAGE, answer=merged(lambda r: (r.get("artifact"), place_text(r.get("place")),
                                        r.get("route")),
                             lambda g: max(g, key=lambda r: str(r.get("version"))))),
    Row("usage-read-row-per-ranged-get", "USAGE-1.d",
        "eight ranged GETs of one checkpoint by one box show as eight rows",
        ANY, answer=served(_ranged_gets, usage(_row_per_ranged_get)), watched=True),
    Row("usage-read-rows-of-two-places-merged", "USAGE-1.d",
        "reads of one version on one route from two places appear as one row",
        USAGE, answer=merged(lambda r: (r.get("artifact"), r.get("version"), r.get("route")),
                             lambda g: g[0])),
    Row("usage-read-row-per-reply-that-gave-the-urls", "USAGE-1.d",
        "reads of one version by one place through two replies' URLs are two rows",
        ANY, answer=numbered(None, _read_per_reply, lambda reply, turn: split_rows(
            "read", _parts_per_reply(turn))(reply, turn)), watched=True),
    # VER-5: the ranks of one job write one upload.
    Row("usage-write-row-per-write-call-into-one-upload", "USAGE-1.d",
        "a version whose upload was joined by a second write shows two write rows",
        ANY, answer=numbered(("versions/write",), _put_per_call, lambda reply, turn: split_rows(
            "write", _parts_per_call(turn))(reply, turn)), watched=True),
    # --- USAGE-1.e
    Row("usage-placements-skip-boxes-without-place", "USAGE-1.e",
        "fallback writes of boxes with place null are not listed in placements",
        USAGE, answer=placements(_without(lambda p: p.get("place") is None))),
    Row("usage-placement-versions-one-short-from-3", "USAGE-1.e",
        "a placement row with 3+ versions reports one version fewer",
        USAGE, answer=each_placement(lambda p: {**p, "versions": p["versions"] - 1}
                                     if int(p.get("versions") or 0) >= 3 else None)),
    Row("usage-placements-omit-azure-default-rows", "USAGE-1.e",
        "placements has no default row for writes of azure boxes in another region",
        USAGE, answer=placements(_without(lambda p: _default_kind(p)
                                          and cloud_of(p.get("place")) == "azure"))),
    Row("usage-placement-bytes-of-first-version-only", "USAGE-1.e",
        "a placement row's bytes stop growing after its first version",
        USAGE, answer=usage(_first_version_bytes)),
    # Any write away from the box is called cross-cloud.
    Row("usage-default-placement-route-cross-cloud", "USAGE-1.e",
        "placements rows of kind default say route cross_cloud instead of inter_region",
        USAGE, answer=each_placement(lambda p: dict(p, route="cross_cloud")
                                     if _default_kind(p) and p.get("route") == "inter_region"
                                     else None)),
    Row("usage-default-placement-location-is-the-box-place", "USAGE-1.e",
        "placements rows of kind default give the box's place as location",
        USAGE, answer=each_placement(
            lambda p: dict(p, location={"cloud": cloud_of(p["place"]),
                                        "region": p["place"].get("region")})
            if _default_kind(p) and isinstance(p.get("place"), dict)
            and p.get("location") != p["place"] else None)),
    # The fallback is taken as the 'other' cloud's default.
    Row("usage-unknown-cloud-placement-kind-default", "USAGE-1.e",
        "placements of a box in an unknown cloud say kind default instead of fallback",
        USAGE, answer=each_placement(lambda p: dict(p, kind="default")
                                     if p.get("kind") == "fallback"
                                     and isinstance(p.get("place"), dict)
                                     and cloud_of(p["place"]) not in KNOWN else None)),
    Row("usage-placements-count-refused-uploads", "USAGE-1.e",
        "placements count versions and bytes of uploads whose commit was refused",
        ANY, answer=_booked_at_write, tracked=True),
    Row("usage-placements-row-per-relaunch-at-one-place", "USAGE-1.e",
        "versions written away by two launches at one place show as two placement rows",
        USAGE, answer=usage(_placement_row_per_relaunch)),
)
