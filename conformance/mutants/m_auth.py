"""Mutants of AUTH-*: missing and unknown keys, refused opens, key scopes."""

from __future__ import annotations

import json
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import (
    Tracked,
    api_get,
    artifact_info,
    artifact_of,
    body_of,
    key_of,
    open_latest,
    with_key,
)


class _Borrow(Tracked):
    """When the upstream refuses ``endpoints`` with ``status``, the request is sent again with
    a key that worked before (``borrow`` decides), and its reply is returned."""

    endpoints: tuple[str, ...] = ()
    status = 401

    def borrow(self, request: Request) -> bool:
        return True

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint not in self.endpoints or response.status != self.status:
            return response
        if not self.borrow(request):
            return response
        with self.lock:
            key = self.t.good_key(artifact_of(request))
        if key is None:
            return response
        again = upstream.send(with_key(request, key))
        return again if again.ok else response


# --- AUTH-1.a: no header or a malformed one ---------------------------------------------


@mutant
class ListWithoutHeader(_Borrow):
    name = "auth_list_without_header_ok"
    clause = "AUTH-1.a"
    summary = "versions/list without any Authorization header is answered with a known key"
    endpoints = ("versions/list",)

    def borrow(self, request: Request) -> bool:
        return request.header("Authorization") is None


@mutant
class OtherSchemeAccepted(_Borrow):
    name = "auth_token_scheme_accepted_on_reads"
    clause = "AUTH-1.a"
    summary = "GETs with 'Authorization: Token <known key>' (not Bearer) are accepted"
    endpoints = ("versions/read", "versions/list", "artifacts/read", "usage/read")

    def borrow(self, request: Request) -> bool:
        auth = request.header("Authorization") or ""
        return auth.startswith("Token ") or auth.startswith("ak_")


# --- AUTH-1.b: unknown keys ----------------------------------------------------------------


@mutant
class UnknownKeyReads(_Borrow):
    name = "auth_unknown_key_reads_versions"
    clause = "AUTH-1.b"
    summary = "versions/read with a well-formed unknown key is answered with a known key"
    endpoints = ("versions/read",)

    def borrow(self, request: Request) -> bool:
        return key_of(request) is not None


@mutant
class UnknownKeyOpen403(Tracked):
    name = "auth_unknown_key_open_403"
    clause = "AUTH-1.b"
    summary = "an open with an unknown key is 403 forbidden instead of 401"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "artifacts/open" and response.status == 401 and key_of(request):
            return Response.error(403, "forbidden", "this key cannot write the artifact")
        return response


# --- AUTH-2.a: an open by a key that cannot write --------------------------------------


@mutant
class ReaderOpenFakeSuccess(Tracked):
    name = "auth_reader_open_latest_answered"
    clause = "AUTH-2.a"
    summary = "a refused latest open of an existing artifact is answered 200 with its state"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint != "artifacts/open" or response.status != 403:
            return response
        if body.get("resume") != "latest":
            return response
        key = key_of(request)
        info = artifact_info(upstream, key, str(body.get("artifact")))
        if info is None:
            return response
        latest = api_get(upstream, "versions/read", key, artifact=info["artifact"], urls="1")
        reply = {
            "artifact": info["artifact"], "epoch": int(info["epoch"]) + 1,
            "token": f"tok_{info['artifact'].replace('/', '_')}_{info['epoch']}",
            "holder": body.get("holder") or "reader",
            "fenced": {"epoch": info["epoch"], "holder": info["holder"]},
            "resume_from": latest.json() if latest.ok else None,
            "write_location": {"cloud": "aws", "region": "us-east-1", "route": "local"},
            "warnings": [],
        }
        return Response(200, (("Content-Type", "application/json"),)).with_json(reply)


@mutant
class RefusedOpenNewAs404(Tracked):
    name = "auth_refused_open_of_new_artifact_404"
    clause = "AUTH-2.a"
    summary = "an open refused for scope is 404 not_found when the artifact does not exist yet"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/open" or response.status != 403:
            return response
        with self.lock:
            key = self.t.good_key()
        if key and artifact_info(upstream, key, str(artifact_of(request))) is None:
            return Response.error(404, "not_found", "no such artifact")
        return response


# --- AUTH-2.b: a refused open changes nothing -------------------------------------------


@mutant
class RefusedOpenCreates(Tracked):
    name = "auth_refused_open_creates_artifact"
    clause = "AUTH-2.b"
    summary = "an open refused for scope still creates the artifact when it did not exist"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/open" or response.status != 403:
            return response
        art = str(artifact_of(request))
        with self.lock:
            key = self.t.good_key()
        if key and artifact_info(upstream, key, art) is None:
            open_latest(upstream, key, art, "scope-check")
        return response


@mutant
class RefusedOpenFencesSameHolder(Tracked):
    name = "auth_refused_open_reopens_for_holder"
    clause = "AUTH-2.b"
    summary = "an open refused for scope re-opens the artifact for its holder (epoch up, same name)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/open" or response.status != 403:
            return response
        with self.lock:
            newest = self.t.newest.get(str(artifact_of(request)))
        if newest is not None:
            open_latest(upstream, newest.key, newest.artifact, newest.holder)
        return response


# --- AUTH-3.a: a read key reads, lists, reads usage; cannot write or commit -------------


class _NotOpener(Tracked):
    """Refuse ``endpoint`` to every key but the one that opened the artifact last."""

    endpoint = ""

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != self.endpoint or not response.ok:
            return response
        art = artifact_of(request)
        with self.lock:
            newest = self.t.newest.get(art or "")
        if art and newest is not None and newest.key != key_of(request):
            return Response.error(403, "forbidden", "this key cannot read the artifact")
        return response


@mutant
class ListOnlyOpener(_NotOpener):
    name = "auth_list_only_for_opener_key"
    clause = "AUTH-3.a"
    summary = "versions/list is 403 for every key but the one that opened the artifact"
    endpoint = "versions/list"


@mutant
class UsageOnlyOpener(_NotOpener):
    name = "auth_usage_only_for_opener_key"
    clause = "AUTH-3.a"
    summary = "usage/read?artifact= is 403 for every key but the one that opened the artifact"
    endpoint = "usage/read"


@mutant
class ReaderCommit404(Tracked):
    name = "auth_reader_commit_404"
    clause = "AUTH-3.a"
    summary = "a commit by a key without write is 404 not_found (upload unknown) instead of 403"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/commit" and response.status == 403:
            with self.lock:
                writer = key_of(request) in self.t.writer_keys
            if not writer:
                return Response.error(404, "not_found", "no such upload")
        return response


# --- AUTH-3.b: outside the prefixes, every endpoint is 403 ------------------------------


@mutant
class ScopeLeakLatest(_Borrow):
    name = "auth_scope_leak_read_default_version"
    clause = "AUTH-3.b"
    summary = "versions/read outside the key's prefixes answers when version is omitted"
    endpoints = ("versions/read",)
    status = 403

    def borrow(self, request: Request) -> bool:
        return request.arg("version") is None


@mutant
class ScopeArtifactsRead404(Tracked):
    name = "auth_scope_artifacts_read_404"
    clause = "AUTH-3.b"
    summary = "artifacts/read outside the key's prefixes is 404 not_found instead of 403"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "artifacts/read" and response.status == 403:
            return Response.error(404, "not_found", "no such artifact")
        return response


@mutant
class ScopeLeakUsage(_Borrow):
    name = "auth_scope_leak_usage_of_artifact"
    clause = "AUTH-3.b"
    summary = "usage/read?artifact= outside the key's prefixes answers with the artifact's usage"
    endpoints = ("usage/read",)
    status = 403


# --- AUTH-3.c: write implies read ---------------------------------------------------------


class _LimitedWriterRefused(Tracked):
    """A key that opened the artifact but was refused elsewhere (a prefix-scoped writer)
    gets 403 on ``endpoint`` for that artifact."""

    endpoint = ""

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != self.endpoint or not response.ok:
            return response
        key, art = key_of(request), artifact_of(request)
        with self.lock:
            newest = self.t.newest.get(art or "")
            limited = key in self.t.refused_keys
        if art and newest is not None and newest.key == key and limited:
            return Response.error(403, "forbidden", "this key has no read access here")
        return response


@mutant
class ScopedWriterCannotList(_LimitedWriterRefused):
    name = "auth_scoped_writer_cannot_list"
    clause = "AUTH-3.c"
    summary = "a prefix-scoped write key gets 403 on versions/list of its own artifact"
    endpoint = "versions/list"


@mutant
class ScopedWriterCannotRead(_LimitedWriterRefused):
    name = "auth_scoped_writer_cannot_read_version"
    clause = "AUTH-3.c"
    summary = "a prefix-scoped write key gets 403 on versions/read of its own artifact"
    endpoint = "versions/read"


# --- AUTH-3.d: usage without artifact covers only what the key can read ------------------


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


@mutant
class UsageAllLeaksLastArtifact(Tracked):
    name = "auth_usage_all_leaks_other_keys_artifact"
    clause = "AUTH-3.d"
    summary = "usage/read without artifact, for a key refused before, adds another key's artifact"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "usage/read" or request.arg("artifact") or not response.ok:
            return response
        key = key_of(request)
        with self.lock:
            if key not in self.t.refused_keys:
                return response
            others = [i for i in self.t.newest.values() if i.key != key and i.key]
        if not others:
            return response
        other = others[-1]
        theirs = api_get(upstream, "usage/read", other.key, artifact=other.artifact)
        if not theirs.ok:
            return response
        return response.with_json(_merge_usage(response.json(), theirs.json()))


@mutant
class UsageAllAsWriteKey(Tracked):
    name = "auth_usage_all_answered_as_unlimited_key"
    clause = "AUTH-3.d"
    summary = "usage/read without artifact, for a key refused before, answers as an unlimited key"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "usage/read" or request.arg("artifact") or not response.ok:
            return response
        key = key_of(request)
        with self.lock:
            if key not in self.t.refused_keys:
                return response
            writer = self.t.good_key()
        if writer is None or writer == key:
            return response
        again = upstream.send(with_key(request, writer))
        return again if again.ok else response

