"""Mutants of retention (VER-7): a deleted version still read, listed, counted or placed,
its step taken for an existing version, its URLs revoked at once, and deletes the contract
refuses (the latest, a fenced token, a read key, a second delete) let through."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.tracking import Tracked, api_get, body_of, key_of, with_key


def _deleting(request: Request) -> bool:
    return request.endpoint == "versions/delete" and request.method == "POST"


def _answer(body: dict[str, Any]) -> Response:
    when = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    reply = {"artifact": body.get("artifact"), "version": body.get("version"),
             "deleted_at": when}
    return Response(200, (("Content-Type", "application/json"),)).with_json(reply)


class Deletions(Tracked):
    """Keeps, per deleted version, what ``versions/read`` answered just before the delete."""

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if _deleting(request):
            body = body_of(request)
            got = api_get(upstream, "versions/read", key_of(request),
                          artifact=str(body.get("artifact")), version=str(body.get("version")))
            with self.lock:
                self.state.setdefault("read", {})[
                    (body.get("artifact"), body.get("version"))] = got
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if _deleting(request) and response.ok:
            body = body_of(request)
            with self.lock:
                self.state.setdefault("gone", {})[(body.get("artifact"), body.get("version"))] = \
                    self.state.get("read", {}).get((body.get("artifact"), body.get("version")))
        return self.later(request, response, upstream)

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        return response

    def gone(self, artifact: object) -> dict[str, Response]:
        with self.lock:
            return {v: r for (a, v), r in self.state.get("gone", {}).items()
                    if a == artifact and r is not None}


@mutant
class DeletedStillListed(Deletions):
    name = "ver-deleted-version-still-listed"
    clause = "VER-7.a"
    summary = "versions/list still lists a deleted version"

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        if request.endpoint != "versions/list" or not isinstance(body, dict):
            return response
        gone = self.gone(request.arg("artifact"))
        rows = list(body.get("versions") or [])
        for reply in gone.values():
            row = reply.json()
            if isinstance(row, dict):
                rows.append({k: v for k, v in row.items() if k not in ("files",)})
        rows.sort(key=lambda r: str(r.get("version")))
        return response.with_json({**body, "versions": rows}) if gone else response


@mutant
class DeletedStillReadable(Deletions):
    name = "ver-deleted-version-still-read"
    clause = "VER-7.a"
    summary = "versions/read of a deleted version answers it as before the delete"

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/read" or response.status != 404:
            return response
        return self.gone(request.arg("artifact")).get(str(request.arg("version")), response)


@mutant
class DeletedStillCounted(Deletions):
    name = "ver-deleted-version-still-counted"
    clause = "VER-7.a"
    summary = "artifacts/read's versions count keeps counting deleted versions"

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        if request.endpoint != "artifacts/read" or not isinstance(body, dict) \
                or not isinstance(body.get("versions"), int):
            return response
        gone = self.gone(request.arg("artifact"))
        return response.with_json({**body, "versions": body["versions"] + len(gone)}) \
            if gone else response


@mutant
class DeletedStillPlaced(Deletions):
    """Usage placements keep the rows they had before the first delete of the artifact."""

    name = "ver-deleted-version-still-in-placements"
    clause = "VER-7.a"
    summary = "usage placements still count a deleted version's versions and bytes"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if _deleting(request):
            artifact = str(body_of(request).get("artifact"))
            got = api_get(upstream, "usage/read", key_of(request), artifact=artifact)
            data = got.json() if got.ok else None
            with self.lock:
                if isinstance(data, dict):
                    self.state.setdefault("placed", {}).setdefault(artifact,
                                                                   data.get("placements"))
        return super().before(request, upstream)

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        artifact = request.arg("artifact")
        if request.endpoint != "usage/read" or not isinstance(body, dict) or not artifact:
            return response
        with self.lock:
            kept = self.state.get("placed", {}).get(artifact)
        if kept is None or not self.gone(artifact):
            return response
        return response.with_json({**body, "placements": kept})


@mutant
class DeletedStepExists(Deletions):
    name = "ver-deleted-step-written-again-gets-version-exists"
    clause = "VER-7.b"
    summary = "writing or committing a deleted step again gets 409 version_exists"

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/write" and error_code(response) == "not_after_latest" \
                and str(body_of(request).get("version")) in \
                self.gone(body_of(request).get("artifact")):
            return Response.error(409, "version_exists", "the version was committed before")
        return response


@mutant
class DeleteRevokesUrls(Deletions):
    """URLs of a version read before its delete stop working at once."""

    name = "ver-delete-revokes-the-signed-urls-given-out"
    clause = "VER-7.c"
    summary = "a signed URL handed out before a delete gets 403 right after it"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.method in ("GET", "HEAD"):
            with self.lock:
                revoked = request.path in self.state.get("revoked", set())
            if revoked:
                return Response.error(403, "forbidden", "the version was deleted")
        return super().handle(request, upstream)

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if request.endpoint in ("versions/read", "artifacts/open") and isinstance(data, dict):
            version = data.get("resume_from") if request.endpoint == "artifacts/open" else data
            if isinstance(version, dict):
                with self.lock:
                    urls = self.state.setdefault("urls", {})
                    key = (version.get("artifact"), version.get("version"))
                    for f in version.get("files") or []:
                        if isinstance(f, dict) and isinstance(f.get("url"), str):
                            urls.setdefault(key, set()).add(urlsplit(f["url"]).path)
        if _deleting(request) and response.ok:
            body = body_of(request)
            with self.lock:
                paths = self.state.get("urls", {}).get((body.get("artifact"),
                                                        body.get("version")), set())
                self.state.setdefault("revoked", set()).update(paths)
        return response


@mutant
class LatestDeleteAnswered(Tracked):
    name = "ver-delete-of-the-latest-answers-200"
    clause = "VER-7.d"
    summary = "a delete of the latest version answers 200 (and keeps it) instead of 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if _deleting(request) and error_code(response) == "is_latest":
            return _answer(body_of(request))
        return response


@mutant
class FencedDeleteLetIn(Tracked):
    name = "ver-delete-with-a-fenced-token-done"
    clause = "VER-7.d"
    summary = "a delete with a token older than the artifact's epoch deletes the version"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _deleting(request) or error_code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            newest = self.t.newest.get(str(body.get("artifact")))
        if newest is None:
            return response
        return ok_or(upstream, request.with_json({**body, "token": newest.token}), response)


@mutant
class SecondDeleteAnswered(Tracked):
    name = "ver-delete-of-a-deleted-version-answers-200"
    clause = "VER-7.d"
    summary = "deleting an already deleted version answers 200 again (an idempotent retry)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        key = (body.get("artifact"), body.get("version"))
        if _deleting(request) and response.ok:
            with self.lock:
                self.state.setdefault("done", set()).add(key)
        elif _deleting(request) and response.status == 404:
            with self.lock:
                done = key in self.state.get("done", set())
            if done:
                return _answer(body)
        return response


@mutant
class ReadKeyDeletes(Tracked):
    name = "ver-delete-with-a-read-key-done"
    clause = "VER-7.d"
    summary = "a key with read only deletes a version (the delete checks no write scope)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _deleting(request) or response.status != 403:
            return response
        with self.lock:
            key = self.t.good_key(str(body_of(request).get("artifact")))
        if key is None or key == key_of(request):
            return response
        return ok_or(upstream, with_key(request, key), response)


@mutant
class DeleteWithoutDeletedAt(Tracked):
    name = "shape-delete-answers-without-deleted-at"
    clause = "VER-7.a"
    summary = "versions/delete answers the artifact and version but no deleted_at"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        if _deleting(request) and isinstance(body, dict):
            return response.with_json({k: v for k, v in body.items() if k != "deleted_at"})
        return response


@mutant
class DeletedStepNotFound(Deletions):
    name = "ver-deleted-step-written-again-gets-404"
    clause = "VER-7.b"
    summary = "writing a deleted step again gets 404 not_found (the version is gone)"

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/write" and error_code(response) == "not_after_latest" \
                and str(body_of(request).get("version")) in \
                self.gone(body_of(request).get("artifact")):
            return Response.error(404, "not_found", "the version was deleted")
        return response


@mutant
class DeletedRangesNotFound(DeleteRevokesUrls):
    """Plain GETs of a deleted version's URLs still work, ranged ones get 404."""

    name = "ver-ranged-gets-of-a-deleted-versions-urls-get-404"
    clause = "VER-7.c"
    summary = "a ranged GET of a URL handed out before the delete gets 404 after it"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.header("Range"):
            with self.lock:
                revoked = request.path in self.state.get("revoked", set())
            if revoked:
                return Response.error(404, "not_found", "the version was deleted")
        return Tracked.handle(self, request, upstream)


@mutant
class DeletedBytesReclaimedSoon(DeleteRevokesUrls):
    """The bytes of a deleted version are reclaimed a second after the delete, whatever
    expiry its URLs claimed: a load that began may not complete."""

    name = "ver-deleted-versions-bytes-reclaimed-a-second-after-the-delete"
    clause = "VER-7.c"
    summary = "URLs given out before a delete stop serving one second after it"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.method in ("GET", "HEAD"):
            with self.lock:
                since = self.state.get("since", {}).get(request.path)
            if since is not None and time.monotonic() - since > 1.0:
                return Response.error(404, "not_found", "the bytes were reclaimed")
        return Tracked.handle(self, request, upstream)

    def later(self, request: Request, response: Response, upstream: Upstream) -> Response:
        response = super().later(request, response, upstream)
        if _deleting(request) and response.ok:
            now = time.monotonic()
            with self.lock:
                since = self.state.setdefault("since", {})
                for path in self.state.get("revoked", set()):
                    since.setdefault(path, now)
        return response


@mutant
class DeleteWithoutVersionTakesTheOldest(Tracked):
    """A delete without a version (or with null) deletes the oldest version (a retention
    sweep's default) instead of 400."""

    name = "ver-delete-without-a-version-deletes-the-oldest"
    clause = "VER-7.d"
    summary = "versions/delete with no version deletes the artifact's oldest version"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        if not _deleting(request) or body.get("version") is not None:
            return None
        listed = api_get(upstream, "versions/list", key_of(request),
                         artifact=str(body.get("artifact")))
        rows = (listed.json() or {}).get("versions") if listed.ok else None
        if not rows or len(rows) < 2:
            return None
        return request.with_json({**body, "version": rows[0].get("version")})
