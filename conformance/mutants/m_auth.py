"""Mutants of AUTH-*: missing and unknown keys, refused opens, key scopes; one row each
(rows.py), their bends below."""

from __future__ import annotations

import json
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import ok_or
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import error
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import artifact_info
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import open_latest
from conformance.mutants.tracking import with_key

OPEN, READS = ("artifacts/open",), ("versions/read", "versions/list", "artifacts/read",
                                     "usage/read")


def borrowed_key(reply: Response, turn: Turn) -> Response:
    """The request sent again with a key that opened the artifact (or anything) before,
    and that reply if it succeeds."""
    with turn.lock:
        key = turn.t.good_key(artifact_of(turn.request))
    return reply if key is None else ok_or(turn.upstream, with_key(turn.request, key), reply)


def _other_scheme(request: Request) -> bool:
    auth = request.header("Authorization") or ""
    return auth.startswith("Token ") or auth.startswith("ak_")


def _fake_open(reply: Response, turn: Turn) -> Response:
    """A refused latest open answered 200 with the artifact's state, as if it had opened."""
    sent = body_of(turn.request)
    key = key_of(turn.request)
    info = artifact_info(turn.upstream, key, str(sent.get("artifact")))
    if info is None:
        return reply
    latest = api_get(turn.upstream, "versions/read", key, artifact=info["artifact"], urls="1")
    opened = {
        "artifact": info["artifact"], "epoch": int(info["epoch"]) + 1,
        "token": f"tok_{info['artifact'].replace('/', '_')}_{info['epoch']}",
        "holder": sent.get("holder") or "reader",
        "fenced": {"epoch": info["epoch"], "holder": info["holder"]},
        "resume_from": latest.json() if latest.ok else None,
        "write_location": {"cloud": "aws", "region": "us-east-1", "route": "local"},
        "warnings": [],
    }
    return Response(200, (("Content-Type", "application/json"),)).with_json(opened)


def _not_found_if_new(reply: Response, turn: Turn) -> Response:
    with turn.lock:
        key = turn.t.good_key()
    if key and artifact_info(turn.upstream, key, str(artifact_of(turn.request))) is None:
        return Response.error(404, "not_found", "no such artifact")
    return reply


def _created_anyway(reply: Response, turn: Turn) -> Response:
    art = str(artifact_of(turn.request))
    with turn.lock:
        key = turn.t.good_key()
    if key and artifact_info(turn.upstream, key, art) is None:
        open_latest(turn.upstream, key, art, "scope-check")
    return reply


def _reopened_for_holder(reply: Response, turn: Turn) -> Response:
    with turn.lock:
        newest = turn.t.newest.get(str(artifact_of(turn.request)))
    if newest is not None:
        open_latest(turn.upstream, newest.key, newest.artifact, newest.holder)
    return reply


def _only_opener(reply: Response, turn: Turn) -> Response:
    """403 for every key but the one that opened the artifact last."""
    art = artifact_of(turn.request)
    with turn.lock:
        newest = turn.t.newest.get(art or "")
    if art and newest is not None and newest.key != key_of(turn.request):
        return Response.error(403, "forbidden", "this key cannot read the artifact")
    return reply


def _commit_unknown_to_reader(reply: Response, turn: Turn) -> Response:
    with turn.lock:
        writer = key_of(turn.request) in turn.t.writer_keys
    return reply if writer else Response.error(404, "not_found", "no such upload")


def _limited_writer_refused(reply: Response, turn: Turn) -> Response:
    """403 for a key that opened the artifact but was refused elsewhere (prefix-scoped)."""
    key, art = key_of(turn.request), artifact_of(turn.request)
    with turn.lock:
        newest = turn.t.newest.get(art or "")
        limited = key in turn.t.refused_keys
    if art and newest is not None and newest.key == key and limited:
        return Response.error(403, "forbidden", "this key has no read access here")
    return reply


def _merge_usage(mine: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    routes = {k: dict(v) for k, v in (mine.get("routes") or {}).items()}
    for route, row in (other.get("routes") or {}).items():
        into = routes.setdefault(route, {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0})
        for k in ("write_bytes", "read_bytes", "cost_usd"):
            into[k] = into.get(k, 0) + row.get(k, 0)
    seen = {json_key(r) for r in mine.get("transfers") or []}
    extra = [r for r in other.get("transfers") or [] if json_key(r) not in seen]
    return dict(
        mine,
        routes=routes,
        transfers=list(mine.get("transfers") or []) + extra,
        placements=list(mine.get("placements") or [])
        + [p for p in other.get("placements") or [] if p not in (mine.get("placements") or [])],
        total_cost_usd=float(mine.get("total_cost_usd") or 0) + float(
            other.get("total_cost_usd") or 0),
    )


def json_key(row: Any) -> str:
    return json.dumps(row, sort_keys=True)


def _all_artifacts(request: Request) -> bool:
    return not request.arg("artifact")


def _other_keys_artifact(reply: Response, turn: Turn) -> Response:
    """usage/read without artifact, for a key refused before, with another key's artifact
    merged in."""
    key = key_of(turn.request)
    with turn.lock:
        if key not in turn.t.refused_keys:
            return reply
        others = [i for i in turn.t.newest.values() if i.key != key and i.key]
    if not others:
        return reply
    theirs = api_get(turn.upstream, "usage/read", others[-1].key, artifact=others[-1].artifact)
    return reply.with_json(_merge_usage(reply.json(), theirs.json())) if theirs.ok else reply


def _as_unlimited_key(reply: Response, turn: Turn) -> Response:
    key = key_of(turn.request)
    with turn.lock:
        if key not in turn.t.refused_keys:
            return reply
        writer = turn.t.good_key()
    if writer is None or writer == key:
        return reply
    return ok_or(turn.upstream, with_key(turn.request, writer), reply)


def _on(endpoints: tuple[str, ...], replies: str | int, when: Any = None) -> On:
    return On(endpoints, replies=replies, when=when)


rows(
    Row("auth_list_without_header_ok", "AUTH-1.a",
        "versions/list without any Authorization header is answered with a known key",
        _on(("versions/list",), 401, lambda r: r.header("Authorization") is None),
        answer=borrowed_key, tracked=True),
    Row("auth_token_scheme_accepted_on_reads", "AUTH-1.a",
        "GETs with 'Authorization: Token <known key>' (not Bearer) are accepted",
        _on(READS, 401, _other_scheme), answer=borrowed_key, tracked=True),
    Row("auth_unknown_key_reads_versions", "AUTH-1.b",
        "versions/read with a well-formed unknown key is answered with a known key",
        _on(("versions/read",), 401, lambda r: key_of(r) is not None),
        answer=borrowed_key, tracked=True),
    Row("auth_unknown_key_open_403", "AUTH-1.b",
        "an open with an unknown key is 403 forbidden instead of 401",
        _on(OPEN, 401, lambda r: key_of(r) is not None),
        answer=error(403, "forbidden", "this key cannot write the artifact")),
    Row("auth_reader_open_latest_answered", "AUTH-2.a",
        "a refused latest open of an existing artifact is answered 200 with its state",
        _on(OPEN, 403, lambda r: body_of(r).get("resume") == "latest"), answer=_fake_open,
        tracked=True),
    Row("auth_refused_open_of_new_artifact_404", "AUTH-2.a",
        "an open refused for scope is 404 not_found when the artifact does not exist yet",
        _on(OPEN, 403), answer=_not_found_if_new, tracked=True),
    Row("auth_refused_open_creates_artifact", "AUTH-2.b",
        "an open refused for scope still creates the artifact when it did not exist",
        _on(OPEN, 403), answer=_created_anyway, tracked=True),
    Row("auth_refused_open_reopens_for_holder", "AUTH-2.b",
        "an open refused for scope re-opens the artifact for its holder (epoch up, same name)",
        _on(OPEN, 403), answer=_reopened_for_holder, tracked=True),
    Row("auth_list_only_for_opener_key", "AUTH-3.a",
        "versions/list is 403 for every key but the one that opened the artifact",
        _on(("versions/list",), "ok"), answer=_only_opener, tracked=True),
    Row("auth_usage_only_for_opener_key", "AUTH-3.a",
        "usage/read?artifact= is 403 for every key but the one that opened the artifact",
        _on(("usage/read",), "ok"), answer=_only_opener, tracked=True),
    Row("auth_reader_commit_404", "AUTH-3.a",
        "a commit by a key without write is 404 not_found (upload unknown) instead of 403",
        _on(("versions/commit",), 403), answer=_commit_unknown_to_reader, tracked=True),
    Row("auth_scope_leak_read_default_version", "AUTH-3.b",
        "versions/read outside the key's prefixes answers when version is omitted",
        _on(("versions/read",), 403, lambda r: r.arg("version") is None),
        answer=borrowed_key, tracked=True),
    Row("auth_scope_artifacts_read_404", "AUTH-3.b",
        "artifacts/read outside the key's prefixes is 404 not_found instead of 403",
        _on(("artifacts/read",), 403), answer=error(404, "not_found", "no such artifact")),
    Row("auth_scope_leak_usage_of_artifact", "AUTH-3.b",
        "usage/read?artifact= outside the key's prefixes answers with the artifact's usage",
        _on(("usage/read",), 403), answer=borrowed_key, tracked=True),
    Row("auth_scoped_writer_cannot_list", "AUTH-3.c",
        "a prefix-scoped write key gets 403 on versions/list of its own artifact",
        _on(("versions/list",), "ok"), answer=_limited_writer_refused, tracked=True),
    Row("auth_scoped_writer_cannot_read_version", "AUTH-3.c",
        "a prefix-scoped write key gets 403 on versions/read of its own artifact",
        _on(("versions/read",), "ok"), answer=_limited_writer_refused, tracked=True),
    Row("auth_usage_all_leaks_other_keys_artifact", "AUTH-3.d",
        "usage/read without artifact, for a key refused before, adds another key's artifact",
        _on(("usage/read",), "ok", _all_artifacts), answer=_other_keys_artifact, tracked=True),
    Row("auth_usage_all_answered_as_unlimited_key", "AUTH-3.d",
        "usage/read without artifact, for a key refused before, answers as an unlimited key",
        _on(("usage/read",), "ok", _all_artifacts), answer=_as_unlimited_key, tracked=True),
)
