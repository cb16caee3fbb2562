"""Mutants of the single contract sentences issue 19 found no test sending a request down:
authorization checked after the open's other refusals, ``latest`` from a place, lists past a
first page, an unknown key on usage of everything, duplicate declared files, a commit body
without ``upload``, the published prices losing their "any other cloud" entry, and a string
``place`` in an open."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, emptied, mutant
from conformance.mutants.tracking import (
    Tracked,
    api_get,
    body_of,
    versions_of,
)

FORK = "o41://"


def _json(response: Response) -> dict[str, Any]:
    body = response.json()
    return body if isinstance(body, dict) else {}


# --- AUTH-2.c: the key before anything else -------------------------------------------


class _RefusedOpen(Tracked):
    """When the upstream refuses an open with 403, look (with a key that worked) at what
    else is wrong with it, and answer that error instead (``instead``)."""

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/open" or response.status != 403:
            return response
        body = body_of(request)
        with self.lock:
            key = self.t.good_key(body.get("artifact"))
        if key is None or not isinstance(body.get("artifact"), str):
            return response
        return self.instead(upstream, key, body) or response

    def instead(self, upstream: Upstream, key: str, body: dict[str, Any]) -> Response | None:
        return None


def _source(resume: Any) -> tuple[str, str] | None:
    if not isinstance(resume, str) or not resume.startswith(FORK):
        return None
    artifact, _, version = resume[len(FORK):].rpartition("/")
    return (artifact, version) if artifact else None


@mutant
class ForkIntoNonEmptyBeforeKey(_RefusedOpen):
    name = "auth-fork-into-nonempty-by-unwriting-key-gets-not-empty"
    clause = "AUTH-2.c"
    summary = "a fork by a key that cannot write a target with versions answers 409 not_empty"

    def instead(self, upstream, key, body):  # noqa: ANN001, ANN201
        if _source(body.get("resume")) and versions_of(upstream, key, body["artifact"]):
            return Response.error(409, "not_empty", "the fork target already has versions")
        return None


@mutant
class ForkFromMissingBeforeKey(_RefusedOpen):
    name = "auth-fork-from-missing-source-by-unwriting-key-gets-404"
    clause = "AUTH-2.c"
    summary = "a fork by a key that cannot write the target answers 404 when the source is missing"

    def instead(self, upstream, key, body):  # noqa: ANN001, ANN201
        src = _source(body.get("resume"))
        if src and api_get(upstream, "versions/read", key, artifact=src[0],
                           version=src[1]).status == 404:
            return Response.error(404, "not_found", f"no version {src[1]} in {src[0]}")
        return None


@mutant
class FreshOnCheckpointsBeforeKey(_RefusedOpen):
    name = "auth-fresh-open-by-unwriting-key-gets-has-checkpoints"
    clause = "AUTH-2.c"
    summary = "a fresh open by a key that cannot write answers 409 has_checkpoints if versions"

    def instead(self, upstream, key, body):  # noqa: ANN001, ANN201
        if body.get("resume") is None and versions_of(upstream, key, body["artifact"]):
            return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
        return None


# --- READ-1.a / READ-1.c: latest from a place, lists past a first page ----------------


@mutant
class LatestOfReadersCloud(Tracked):
    """``latest`` read with a place answers the newest version located in the reader's
    cloud when there is one (the newest being elsewhere)."""

    name = "read-latest-with-place-prefers-readers-cloud"
    clause = "READ-1.a"
    summary = "latest read with a place gives the newest version in the reader's cloud"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/read" or not response.ok or not request.arg("place") \
                or request.arg("version", "latest") != "latest":
            return response
        cloud = (request.arg("place") or "").partition("/")[0].lower()
        if (_json(response).get("location") or {}).get("cloud") == cloud:
            return response
        with self.lock:
            key = self.t.good_key(request.arg("artifact"))
        mine = [v for v in versions_of(upstream, key, str(request.arg("artifact")))
                if (v.get("location") or {}).get("cloud") == cloud]
        if not mine:
            return response
        again = upstream.send(request.with_query(version=str(mine[-1].get("version"))))
        return again if again.ok else response


@mutant
class ListFirstPageOnly(Tracked):
    """``versions/list`` answers its first 10 versions only, with no sign of more."""

    name = "read-list-first-page-of-10-only"
    clause = "READ-1.c"
    summary = "versions/list shows only the first 10 versions"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        if request.endpoint != "versions/list" or not response.ok \
                or not isinstance(body.get("versions"), list):
            return response
        return response.with_json({**body, "versions": body["versions"][:10]})


# --- AUTH-1.b: usage of everything with an unknown key --------------------------------


@mutant
class UnknownKeyUsageOfAllEmpty(Tracked):
    """``usage/read`` without ``artifact`` and with a well-formed unknown key answers an
    empty report (nothing the key can read) instead of 401."""

    name = "auth-unknown-key-usage-of-all-gets-empty-report"
    clause = "AUTH-1.b"
    summary = "usage/read with no artifact and an unknown key answers 200 with nothing in it"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "usage/read" or request.arg("artifact") is not None \
                or response.status != 401 or not (request.header("Authorization") or "") \
                .startswith("Bearer ak_"):
            return response
        with self.lock:
            key = self.t.good_key()
        return emptied(api_get(upstream, "usage/read", key)) or response


# --- VER-1.c: files declared twice, or twins -------------------------------------------


def _files(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    files = body.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        return None
    return files


@mutant
class TwinContentRefused(Tracked):
    name = "ver-write-of-two-names-with-same-content-refused"
    clause = "VER-1.c"
    summary = "a write declaring two names with the same size and sha256 answers 400"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        files = _files(body_of(request)) if request.endpoint == "versions/write" else None
        seen = [(f.get("size"), f.get("sha256")) for f in files or []]
        if len(set(seen)) < len(seen) and len({f.get("name") for f in files or []}) == len(seen):
            return Response.error(400, "invalid_argument", "two files with the same content")
        return None


@mutant
class DuplicateNameLastWins(Tracked):
    name = "ver-write-of-one-name-twice-keeps-the-last"
    clause = "VER-1.c"
    summary = "a write declaring one file name twice is accepted, the last declaration kept"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        files = _files(body) if request.endpoint == "versions/write" else None
        if not files:
            return None
        last = {f.get("name"): f for f in files if isinstance(f.get("name"), str)}
        if len(last) == len(files) or len(last) != len({f.get("name") for f in files}):
            return None
        return request.with_json({**body, "files": list(last.values())})


# --- API-1.f: a commit without upload, a string place ----------------------------------


@mutant
class CommitWithoutUploadTakesNewest(Tracked):
    """A commit body without ``upload`` (or with a null one) commits the newest upload of
    its token whose files all arrived."""

    name = "api-commit-without-upload-commits-the-newest-upload"
    clause = "API-1.f"
    summary = "a commit body without upload commits the token's newest fully PUT upload"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        if request.endpoint != "versions/commit" or not body or body.get("upload") is not None:
            return None
        with self.lock:
            ready = [u for u in self.t.uploads.values() if u.token == body.get("token")
                     and u.artifact == body.get("artifact") and u.complete]
        if not ready:
            return None
        newest = max(ready, key=lambda u: u.complete_seq or 0)
        return request.with_json({**body, "upload": newest.upload})


@mutant
class StringPlaceAccepted(Tracked):
    name = "api-open-with-string-place-accepted"
    clause = "API-1.f"
    summary = "an open with place 'cloud/region' (a string, not an object) is accepted"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        place = body.get("place") if request.endpoint == "artifacts/open" else None
        if isinstance(place, str) and place.count("/") == 1:
            cloud, region = place.split("/")
            return request.with_json({**body, "place": {"cloud": cloud, "region": region}})
        return None


# --- USAGE-1.f: the published prices -----------------------------------------------------


@mutant
class PricesLoseOtherCloud(Tracked):
    """The published ``prices`` lose the cross-cloud entry for clouds not in the table
    (costs stay right: they follow the table)."""

    name = "usage-prices-drop-cross-cloud-of-other-clouds"
    clause = "USAGE-1.f"
    summary = "usage's prices has no cross_cloud price for a cloud outside aws/gcp/azure"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        prices = body.get("prices")
        if request.endpoint != "usage/read" or not response.ok or not isinstance(prices, dict):
            return response
        cross = prices.get("cross_cloud")
        if not isinstance(cross, dict):
            return response
        kept = {c: v for c, v in cross.items() if c in ("aws", "gcp", "azure")}
        return response.with_json({**body, "prices": {**prices, "cross_cloud": kept}})



@mutant
class PricesPublishGcpAtDefault(Tracked):
    """The published ``prices`` show gcp's cross-cloud egress at the default 0.09 (costs
    stay right: they follow the table)."""

    name = "usage-prices-publish-gcp-cross-cloud-at-0.09"
    clause = "USAGE-1.f"
    summary = "usage's prices show gcp's cross_cloud price as 0.09 instead of 0.12"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        prices = body.get("prices")
        cross = prices.get("cross_cloud") if isinstance(prices, dict) else None
        if request.endpoint != "usage/read" or not response.ok or not isinstance(cross, dict) \
                or "gcp" not in cross:
            return response
        return response.with_json({**body, "prices": {**prices,
                                                      "cross_cloud": {**cross, "gcp": 0.09}}})
