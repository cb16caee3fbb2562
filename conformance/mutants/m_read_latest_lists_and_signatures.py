"""Mutants of READ-1 to READ-4 right in the common case: latest read with a place (the
reader's cloud preferred, a stale cache), step 0 taken for latest, a fork without versions
read as its source, lists cut to a first page or given the writer's routes; and on the data
plane a range of the whole file or starting at its size, a zero-byte file's URL, a
signature of another artifact or with characters appended.

One row each (rows.py); the data-plane ones are watched rows: they look up the signed URL a
request uses among those handed out (the memory ``Watching`` keeps of each URL's file, size
and version)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.reads import parse_range
from conformance.mutants.reads import request_key
from conformance.mutants.reads import resend
from conformance.mutants.reads import with_headers
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import body
from conformance.mutants.rows import retried
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of

Json = dict[str, Any]
READ, LIST = ("versions/read",), ("versions/list",)


def _latest(request: Request) -> bool:
    return request.arg("version", "latest") == "latest"


def _newest_in_the_readers_cloud(turn: Turn) -> Request | None:
    request = turn.request
    cloud = (request.arg("place") or "").partition("/")[0].lower()
    with turn.lock:
        key = turn.t.good_key(request.arg("artifact"))
    mine = [v for v in versions_of(turn.upstream, key, str(request.arg("artifact")))
            if (v.get("location") or {}).get("cloud") == cloud]
    return request.with_query(version=str(mine[-1].get("version"))) if mine else None


def _elsewhere(reply: Response, turn: Turn) -> bool:
    cloud = (turn.request.arg("place") or "").partition("/")[0].lower()
    return (reply.json().get("location") or {}).get("cloud") != cloud


def _in_the_readers_cloud(reply: Response, turn: Turn) -> Response:
    if not _elsewhere(reply, turn):
        return reply
    return retried(_newest_in_the_readers_cloud)(reply, turn)


def _first_answer_kept(reply: Response, turn: Turn) -> Response:
    key = ("cache", turn.request.arg("artifact"), turn.request.arg("place"))
    with turn.lock:
        return turn.memory.setdefault(key, reply)


def _the_fork_source_version(reply: Response, turn: Turn) -> Response:
    request = turn.request
    state = api_get(turn.upstream, "artifacts/read", key_of(request),
                    artifact=str(request.arg("artifact")))
    data = state.json() if state.ok else None
    src = data.get("forked_from") if isinstance(data, dict) else None
    if not isinstance(src, dict) or data.get("latest") is not None:
        return reply
    query = {k: v for k, v in request.query if k not in ("artifact", "version")}
    got = api_get(turn.upstream, "versions/read", key_of(request),
                  artifact=str(src["artifact"]), version=str(src["version"]), **query)
    return got if got.ok else reply


def _listed(change: Any) -> Any:
    return body(lambda listing: {**listing, "versions": change(listing["versions"])}
                if isinstance(listing.get("versions"), list) else None)


rows(
    Row("read-latest-with-place-prefers-readers-cloud", "READ-1.a",
        "latest read with a place gives the newest version in the reader's cloud",
        On(READ, when=lambda r: bool(r.arg("place")) and _latest(r)),
        answer=_in_the_readers_cloud, tracked=True),
    Row("read-latest-with-place-stale", "READ-1.a",
        "a latest read with place= keeps answering the version it first answered",
        On(READ, when=lambda r: bool(r.arg("place")) and _latest(r) and r.arg("urls") != "1"),
        answer=_first_answer_kept, tracked=True),
    Row("read-latest-of-a-fork-without-versions-gives-the-source-version", "READ-1.a",
        "versions/read of latest of a fork with no versions answers the source's version",
        On(READ, replies=404, when=_latest), answer=_the_fork_source_version, tracked=True),
    Row("read-step-zero-gives-latest", "READ-1.b",
        "a read of step-00000000, never committed, answers the latest version",
        On(READ, when=lambda r: r.arg("version") == "step-00000000"),
        ask=lambda r: r.with_query(version="latest"), tracked=True),
    Row("read-list-first-page-of-10-only", "READ-1.c",
        "versions/list shows only the first 10 versions",
        On(LIST), answer=_listed(lambda listed: listed[:10]), tracked=True),
    Row("read-list-routes-relative-to-the-writer", "READ-1.c",
        "versions/list rows carry route local and cross_cloud false, not null",
        On(LIST), answer=body(lambda listing: {**listing, "versions": [
            {**v, "route": "local", "cross_cloud": False}
            if isinstance(v, dict) and v.get("route") is None else v
            for v in listing.get("versions") or []]}), tracked=True),
)


# --- the data plane: watched rows, which look up the signed URL a request uses among those
# handed out (reads.py)


def _file(turn: Turn) -> Json | None:
    """What the data-plane request's URL points at, if it was handed out."""
    return turn.seen.info(turn.request) if turn.seen else None


def _whole_range_as_200(reply: Response, turn: Turn) -> Response:
    info = _file(turn)
    if info and isinstance(info.get("size"), int):
        span = parse_range(turn.request.header("Range"), info["size"])
        if span == (0, info["size"] - 1) and info["size"] > 0:
            return with_headers(reply.with_body(reply.body, 200), Content_Range=None)
    return reply


def _range_at_size_empty(reply: Response, turn: Turn) -> Response:
    info = _file(turn)
    raw = (turn.request.header("Range") or "").removeprefix("bytes=").partition("-")[0]
    if info and raw.isdigit() and int(raw) == info.get("size") and info["size"] > 0:
        size = info["size"]
        return Response(206, (("Content-Range", f"bytes {size}-{size}/{size}"),
                              ("Content-Type", "application/octet-stream")), b"")
    return reply


def _signed_for_other_artifact(reply: Response, turn: Turn) -> Response:
    """The file of the same version and name in the artifact the URL's path names, when the
    signature is one handed out for another artifact."""
    request, seen = turn.request, turn.seen
    if seen is None:
        return reply
    query = request_key(request)[1]
    with turn.lock:
        signer = [i for k, i in seen.urls.items() if k[1] == query]
        owner = [i for k, i in seen.urls.items() if k[0] == request.path
                 and i["method"] == request.method]
    if not signer or not owner:
        return reply
    a, b = signer[0], owner[-1]
    if a["artifact"] != b["artifact"] and (a["version"], a["name"]) == (b["version"], b["name"]):
        return turn.upstream.send(resend(request, b["url"]))
    return reply


def _signature_with_suffix(reply: Response, turn: Turn) -> Response:
    """The URL handed out for this path, when each value sent starts with its value."""
    request, seen = turn.request, turn.seen
    if seen is None:
        return reply
    sent = dict(request.query)
    with turn.lock:
        same = [i for k, i in seen.urls.items() if k[0] == request.path]
    for info in same:
        real = dict(parse_qsl(info["url"].partition("?")[2], keep_blank_values=True))
        if set(real) == set(sent) and all(sent[k].startswith(v) for k, v in real.items()) \
                and any(sent[k] != v for k, v in real.items()):
            return turn.upstream.send(resend(request, info["url"]))
    return reply


def _empty_file_404(turn: Turn) -> Response | None:
    info, request = _file(turn), turn.request
    if info and info["method"] == "GET" and request.method == "GET" \
            and info.get("size") == 0 and not request.header("Range"):
        return Response.error(404, "not_found", "no such object")
    return None


rows(
    Row("read-range-of-whole-file-answers-200", "READ-3.a",
        "bytes=0-<last> answers 200 with no Content-Range instead of 206",
        On(kind="data", replies=206), answer=_whole_range_as_200, watched=True),
    Row("read-range-starting-at-size-gives-empty-206", "READ-3.b",
        "bytes=<size>-<n> answers 206 with an empty body instead of 416",
        On(kind="data", replies=416), answer=_range_at_size_empty, watched=True),
    # The artifact is left out of what is signed.
    Row("read-sig-valid-for-same-version-and-file-of-other-artifact", "READ-4.a",
        "a URL's signature works on the same version and file name of another artifact",
        On(kind="data", replies=403), answer=_signed_for_other_artifact, watched=True),
    # The signature compared as a prefix.
    Row("read-sig-with-extra-characters-appended-accepted", "READ-4.b",
        "a signature with characters appended to it is accepted",
        On(kind="data", replies=403), answer=_signature_with_suffix, watched=True),
    # Nothing was stored for a zero-byte file.
    Row("read-url-of-zero-byte-file-404", "READ-2.a",
        "a plain GET of a zero-byte file's URL answers 404",
        On(kind="data", replies="any"), serve=_empty_file_404, watched=True),
)
