"""Mutants that are right for the first ten versions (or opens, files, rows) of an artifact
and wrong after: a server that reads one page of its version index where it needs all of
it. One row each (rows.py)."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.open_bends import SOURCE
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import body
from conformance.mutants.rows import retried
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of

Json = dict[str, Any]
PAGE = 10
OPEN = ("artifacts/open",)


def _paged(turn: Turn, artifact: Any) -> list[Json]:
    """The committed versions of ``artifact``, listed with the request's key (or one that
    opened it)."""
    if not isinstance(artifact, str):
        return []
    key = key_of(turn.request)
    with turn.lock:
        key = key or turn.t.good_key(artifact)
    return versions_of(turn.upstream, key, artifact)


def _the_tenth(turn: Turn) -> Any:
    listed = _paged(turn, turn.request.arg("artifact"))
    return turn.request.with_query(version=str(listed[PAGE - 1].get("version"))) \
        if len(listed) > PAGE else None


def _resume_from_the_tenth(reply: Response, turn: Turn) -> Response:
    opened, sent = reply.json(), body_of(turn.request)
    if not opened.get("resume_from"):
        return reply
    listed = _paged(turn, sent.get("artifact"))
    if len(listed) <= PAGE:
        return reply
    place = sent.get("place")
    query = {"artifact": sent["artifact"], "version": str(listed[PAGE - 1].get("version")),
             "urls": "1"}
    if isinstance(place, dict):
        query["place"] = f"{place.get('cloud')}/{place.get('region')}"
    tenth = api_get(turn.upstream, "versions/read", key_of(turn.request), **query)
    return reply.with_json({**opened, "resume_from": tenth.json()}) if tenth.ok else reply


def _fork_past_the_tenth(turn: Turn) -> Response | None:
    m = SOURCE.match(str(body_of(turn.request).get("resume") or ""))
    if not m:
        return None
    names = [v.get("version") for v in _paged(turn, m[1])]
    if m[2] in names[PAGE:]:
        return Response.error(404, "not_found", f"no version {m[2]} in {m[1]}")
    return None


def _per_artifact_rows_capped(report: Json) -> Json | None:
    rows_ = report.get("transfers")
    if not isinstance(rows_, list):
        return None
    seen: dict[Any, int] = {}
    kept = []
    for row in rows_:
        art = row.get("artifact") if isinstance(row, dict) else None
        seen[art] = seen.get(art, 0) + 1
        if seen[art] <= PAGE:
            kept.append(row)
    return {**report, "transfers": kept}


def _placement_versions_capped(report: Json) -> Json | None:
    places = report.get("placements")
    if not isinstance(places, list):
        return None
    return {**report, "placements": [
        {**r, "versions": min(r["versions"], PAGE)}
        if isinstance(r, dict) and isinstance(r.get("versions"), int) else r for r in places]}


def _files_capped(reply: Response, turn: Turn) -> Response:
    data = reply.json()
    opening = turn.request.endpoint == "artifacts/open"
    node = data.get("resume_from") if opening else data
    if not isinstance(node, dict) or not isinstance(node.get("files"), list) \
            or len(node["files"]) <= PAGE:
        return reply
    node = {**node, "files": node["files"][:PAGE]}
    return reply.with_json({**data, "resume_from": node} if opening else node)


def _epoch_of_the_tenth_open(reply: Response, turn: Turn) -> Response:
    opened = reply.json()
    with turn.lock:
        opens = turn.t.opens.get(str(opened.get("artifact"))) or []
        tenth = opens[PAGE - 1].epoch if len(opens) > PAGE else None
    return reply.with_json({**opened, "epoch": tenth}) if tenth is not None else reply


rows(
    Row("read-latest-is-the-tenth-when-more-than-10-versions", "READ-1.a",
        "latest reads give the 10th version once an artifact has more than 10",
        On(("versions/read",), when=lambda r: r.arg("version", "latest") == "latest"),
        answer=retried(_the_tenth), tracked=True),
    Row("artifact-read-counts-at-most-10-versions", "API-1.e",
        "artifacts/read reports versions as 10 once an artifact has more",
        On(("artifacts/read",)),
        answer=body(lambda state: {**state, "versions": PAGE}
                    if isinstance(state.get("versions"), int) and state["versions"] > PAGE
                    else None), tracked=True),
    Row("open-resume-from-the-tenth-when-more-than-10-versions", "OPEN-2.a",
        "an open at latest resumes from the 10th version once there are more than 10",
        On(OPEN, when=lambda r: body_of(r).get("resume") == "latest"),
        answer=_resume_from_the_tenth, tracked=True),
    Row("fork-from-a-version-past-the-10th-not-found", "FORK-1.b",
        "a fork from a source version after its 10th answers 404 (and forks nothing)",
        On(OPEN), serve=_fork_past_the_tenth, tracked=True),
    Row("read-list-past-the-10th-in-reverse-order", "READ-1.c",
        "versions/list gives the versions after the 10th newest first",
        On(("versions/list",)),
        answer=body(lambda listing: {**listing, "versions": listing["versions"][:PAGE]
                                     + listing["versions"][PAGE:][::-1]}
                    if isinstance(listing.get("versions"), list)
                    and len(listing["versions"]) > PAGE + 1 else None), tracked=True),
    Row("usage-transfers-of-an-artifact-capped-at-10-rows", "USAGE-1.d",
        "usage lists at most 10 transfer rows per artifact (totals stay right)",
        On(("usage/read",)), answer=body(_per_artifact_rows_capped), tracked=True),
    Row("usage-placement-versions-capped-at-10", "USAGE-1.e",
        "a placements row counts at most 10 versions (its bytes stay right)",
        On(("usage/read",)), answer=body(_placement_versions_capped), tracked=True),
    Row("read-files-of-a-version-capped-at-10", "READ-2.a",
        "a Version of more than 10 files is read back with only its first 10",
        On(("versions/read", *OPEN)), answer=_files_capped, tracked=True),
    Row("fence-epoch-reported-stops-rising-after-10-opens", "FENCE-1.a",
        "opens after the 10th of an artifact report the 10th open's epoch",
        On(OPEN), answer=_epoch_of_the_tenth_open, tracked=True),
)
