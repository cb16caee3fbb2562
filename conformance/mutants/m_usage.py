"""Mutants of USAGE-1.a-b: bytes per route, and the bytes the data plane served; one row
each (rows.py). Each bends ``usage/read`` reports and keeps them self-consistent where
the clause it breaks allows (usage_replies.py); prices are in m_usage_prices.py, transfer
rows and placements in m_usage_rows.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from collections.abc import Hashable
from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.reads import parse_range
from conformance.mutants.reads import request_key
from conformance.mutants.reads import url_key
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import noted
from conformance.mutants.rows import recalled
from conformance.mutants.rows import rows
from conformance.mutants.tracking import body_of
from conformance.mutants.usage_replies import ANY
from conformance.mutants.usage_replies import USAGE
from conformance.mutants.usage_replies import Row as UsageRow
from conformance.mutants.usage_replies import UsageMutant  # noqa: F401  (importable from here)
from conformance.mutants.usage_replies import metered
from conformance.mutants.usage_replies import retotal
from conformance.mutants.usage_replies import usage

Json = dict[str, Any]
Info = dict[str, Any]


def _write_bytes_miss_newest(body: Json, turn: Turn) -> Json | None:
    writes: dict[str, list[UsageRow]] = defaultdict(list)
    for row in body["transfers"]:
        if row.get("direction") == "write":
            writes[row.get("artifact")].append(row)
    touched = False
    for of in writes.values():
        if len({r.get("version") for r in of}) < 2:
            continue
        newest = max(r.get("version") for r in of)
        for r in of:
            if r.get("version") == newest:
                body["routes"][r["route"]]["write_bytes"] -= r["bytes"]
                touched = True
    return body if touched else None


def rerouted(test: Callable[[UsageRow], bool], route: str) -> Bend:
    """A report whose rows ``test`` picks are on ``route`` at no cost."""

    def change(body: Json, turn: Turn) -> Json | None:
        hits = [r for r in body["transfers"] if test(r)]
        for r in hits:
            r["route"], r["cost_usd"] = route, 0.0
        return retotal(body) if hits else None

    return usage(change)


def _got(turn: Turn, reply: Response) -> bool:
    return turn.request.method == "GET" and reply.status in (200, 206)


def _overlong_as_asked(turn: Turn, reply: Response, info: Info) -> int:
    raw = (turn.request.header("Range") or "").removeprefix("bytes=").partition("-")
    if reply.status != 206 or not (raw[0].isdigit() and raw[2].isdigit()):
        return 0
    return max(0, int(raw[2]) - int(raw[0]) + 1 - len(reply.body))


def _head_as_read(turn: Turn, reply: Response, info: Info) -> int:
    if turn.request.method != "HEAD" or reply.status not in (200, 206):
        return 0
    span = parse_range(turn.request.header("Range"), info["size"])
    return span[1] - span[0] + 1 if isinstance(span, tuple) else info["size"]


def _ends_on_last_byte(turn: Turn, reply: Response, info: Info) -> int:
    span = parse_range(turn.request.header("Range"), int(info["size"]))
    return -1 if reply.status == 206 and isinstance(span, tuple) \
        and span[1] == info["size"] - 1 else 0


URLTest = Callable[[Turn, Info], bool]


def unmetered(test: URLTest) -> Bend:
    """Reports without the bytes served through the URLs ``test`` (the turn, the URL's
    facts) picks."""
    return metered(lambda turn, reply, info: -len(reply.body)
                   if _got(turn, reply) and test(turn, info) else 0)


def _resume_urls(reply: Response, turn: Turn) -> set[Hashable]:
    """The keys of the URLs of an open's ``resume_from``."""
    body = reply.json() if reply.ok and turn.request.endpoint == "artifacts/open" else None
    resume = body.get("resume_from") if isinstance(body, dict) else None
    files = resume.get("files") if isinstance(resume, dict) else None
    return {url_key(f["url"]) for f in files or [] if isinstance(f, dict) and f.get("url")}


def _deleted(reply: Response, turn: Turn) -> set[Hashable]:
    body = reply.json() if reply.ok and turn.request.endpoint == "versions/delete" else None
    return {(body.get("artifact"), body.get("version"))} if isinstance(body, dict) else set()


def _opener(reply: Response, turn: Turn) -> set[Hashable]:
    opened = reply.ok and turn.request.endpoint == "artifacts/open"
    return {turn.request.header("Authorization")} if opened else set()


def _not_an_openers(turn: Turn, info: Info) -> bool:
    with turn.lock:
        openers = set(turn.memory.get("openers", set()))
    return bool(openers) and info.get("auth") not in openers


def _streamed_bytes_left_out(reply: Response, turn: Turn) -> Response:
    """Usage counts a version's declared sizes: commits note their streamed files' bytes,
    which reports leave out of the write rows."""
    data = reply.json() if reply.ok else None
    if turn.request.endpoint == "versions/commit" and isinstance(data, dict):
        with turn.lock:
            up = turn.t.uploads.get(str(body_of(turn.request).get("upload")))
            if up is not None:
                streamed = {str(f.get("name")) for f in up.write.get("files") or []
                            if isinstance(f, dict) and "size" not in f}
                turn.memory.setdefault("streamed", {})[(up.artifact, data.get("version"))] = \
                    sum(len(d) for n, d in up.puts.items() if n in streamed)
        return reply
    return usage(_without_streamed)(reply, turn)


def _without_streamed(body: Json, turn: Turn) -> Json | None:
    with turn.lock:
        lost = dict(turn.memory.get("streamed", {}))
    hits = [r for r in body["transfers"] if r.get("direction") == "write"
            and lost.get((r.get("artifact"), r.get("version")))]
    for r in hits:
        n = lost[(r.get("artifact"), r.get("version"))]
        if r["bytes"]:
            r["cost_usd"] = r["cost_usd"] * (r["bytes"] - n) / r["bytes"]
        r["bytes"] -= n
    return retotal(body) if hits else None


rows(
    # --- USAGE-1.a
    Row("usage-write-bytes-miss-newest-version-when-2-versions", "USAGE-1.a",
        "route write_bytes omit the newest version once two versions were written",
        USAGE, answer=usage(_write_bytes_miss_newest)),
    Row("usage-gcp-inter-region-writes-counted-local", "USAGE-1.a",
        "bytes a gcp box writes to another gcp region are counted as local",
        USAGE, answer=rerouted(lambda r: r.get("direction") == "write"
                               and r.get("route") == "inter_region"
                               and (r.get("location") or {}).get("cloud") == "gcp", "local")),
    Row("usage-streamed-files-bytes-not-counted", "USAGE-1.a",
        "usage's write rows leave out the bytes of streamed files",
        On(replies="any"), answer=_streamed_bytes_left_out, tracked=True),
    # --- USAGE-1.b
    Row("usage-reads-without-a-place-counted-local", "USAGE-1.b",
        "bytes read by a reader without a place are counted (and priced) as local",
        USAGE, answer=rerouted(lambda r: r.get("direction") == "read"
                               and r.get("place") is None and r.get("route") != "local",
                               "local")),
    Row("usage-ranged-read-metered-one-byte-short", "USAGE-1.b",
        "every ranged GET counts one byte less than it served",
        ANY, answer=metered(lambda turn, reply, info: -1 if reply.status == 206
                            and turn.request.method == "GET" else 0), watched=True),
    Row("usage-overlong-range-metered-as-requested", "USAGE-1.b",
        "bytes=a-b past the end counts b-a+1 bytes though fewer were sent",
        ANY, answer=metered(_overlong_as_asked), watched=True),
    Row("usage-head-metered-as-full-read", "USAGE-1.b",
        "a HEAD of a signed URL counts the file's size as read bytes",
        ANY, answer=metered(_head_as_read), watched=True),
    Row("usage-416-metered-as-its-error-body", "USAGE-1.b",
        "a 416 reply counts the bytes of its error body as read",
        ANY, answer=metered(lambda turn, reply, info: len(reply.body)
                            if reply.status == 416 else 0), watched=True),
    Row("usage-range-ending-at-last-byte-metered-one-short", "USAGE-1.b",
        "a ranged GET ending on the last byte of the file counts one byte less",
        ANY, answer=metered(_ends_on_last_byte), watched=True),
    # Metering hangs on versions/read: an open's resume_from URLs are not counted.
    Row("usage-reads-through-resume-from-urls-not-counted", "USAGE-1.b",
        "downloads of an open's resume_from URLs are missing from usage",
        ANY, answer=noted("resumed", _resume_urls, unmetered(
            lambda turn, info: recalled("resumed", request_key(turn.request), turn))),
        watched=True),
    # The meter looks the version up and finds nothing (VER-7.c lets the URLs serve).
    Row("usage-reads-of-a-deleted-versions-urls-not-counted", "USAGE-1.b",
        "downloads through URLs of a version deleted since are missing from usage",
        ANY, answer=noted("deleted", _deleted, unmetered(
            lambda turn, info: recalled("deleted", (info["artifact"], info["version"]), turn))),
        watched=True),
    # The meter books reads on the opener's account: a read-only key's are lost.
    Row("usage-reads-by-a-read-only-key-not-counted", "USAGE-1.b",
        "downloads through URLs a read-only key was given are missing from usage",
        ANY, answer=noted("openers", _opener, unmetered(_not_an_openers)), watched=True),
    # --- API-1.f: usage/read?artifact= (present but empty)
    Row("api-usage-with-empty-artifact-reports-everything", "API-1.f",
        "usage/read?artifact= (empty) answers all usage instead of 400",
        On(("usage/read",), replies="any", when=lambda r: r.arg("artifact") == ""),
        ask=lambda r: r.with_query(artifact=None)),
)
