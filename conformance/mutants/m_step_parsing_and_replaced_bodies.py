"""More mutants written from the contract alone: a version name read with Python's ``int``
(underscores and a space between the digits), a shorter later PUT that keeps the earlier
body's tail, a refused joining write that empties the file it repeats, a commit list entry
without its sha256 filled in, and a chunked PUT longer than declared cut and taken."""

from __future__ import annotations

import hashlib
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.m_streamed import StreamBook
from conformance.mutants.m_versions import LenientVersionName
from conformance.mutants.tracking import Tracked, body_of


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@mutant
class IntParsedVersionName(LenientVersionName):
    """The digits are checked with ``int()``: ``step-0000_001`` and ``step- 0000001`` (13
    characters, an int to Python) are taken as step 1."""

    name = "ver-name-with-an-underscore-or-space-among-the-digits-accepted"
    clause = "VER-1.a"
    summary = "step-0000_001 or step- 0000001 is accepted as step-00000001"

    def fix(self, version: str) -> str | None:
        digits = version[5:]
        if not version.startswith("step-") or len(digits) != 8 \
                or not any(c in digits for c in "_ "):
            return None
        try:
            step = int(digits)
        except ValueError:
            return None
        return f"step-{step:08d}" if step >= 0 else None


@mutant
class ShorterPutKeepsTheTail(StreamBook):
    """A later PUT of a streamed file overwrites the stored bytes in place without cutting
    them: when it is shorter, the earlier body's tail stays after it. The PUT answers what
    it received, so the writer's commit list no longer matches the file."""

    name = "ver-shorter-later-put-keeps-the-earlier-bodys-tail"
    clause = "VER-6.b"
    summary = "a shorter second PUT of a streamed file leaves the first body's tail stored"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        found = self.streamed_put(request)
        if found is None:
            return None
        with self.lock:
            stored = self.state.setdefault("stored", {})
            old = stored.get(request.path, b"")
            kept = request.body + old[len(request.body):]
            stored[request.path] = kept
        if kept == request.body:
            return None
        got = upstream.send(Request("PUT", request.path, request.query, request.headers, kept))
        if not got.ok:
            return got
        answer = {"name": found[1], "size": len(request.body), "sha256": _sha(request.body)}
        return Response(200, (("Content-Type", "application/json"),)).with_json(answer)


@mutant
class RefusedJoinEmptiesTheRepeatedFile(Tracked):
    """A joining write that repeats a file of the upload is refused 400, but the repeated
    file was declared afresh before the check: its bytes are gone."""

    name = "ver-write-refused-for-a-repeated-name-empties-that-file"
    clause = "VER-5.b"
    summary = "a joining write refused for a repeated name drops the bytes PUT to that file"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if request.kind == "data" and request.method == "PUT":
            with self.lock:
                self.state.setdefault("put", {})[request.path] = request
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint != "versions/write" or body.get("upload") is None \
                or error_code(response) != "invalid_argument":
            return response
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
            puts = dict(self.state.get("put", {}))
        if up is None:
            return response
        again = {f.get("name") for f in body.get("files") or [] if isinstance(f, dict)}
        for path, name in list(up.paths.items()):
            if name in again and path in puts:
                sent = puts[path]
                upstream.send(Request("PUT", sent.path, sent.query, (), b""))
        return response


@mutant
class ListEntryWithoutHashFilledIn(StreamBook):
    """A commit list entry that gives a streamed file's name and size but no sha256 is
    completed with the sha256 the file received."""

    name = "ver-commit-list-entry-without-sha256-filled-in"
    clause = "VER-6.c"
    summary = "a commit listing a streamed file without sha256 takes the received one"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or response.ok:
            return response
        up = self.upload_of(request)
        body = body_of(request)
        listed: list[Any] = list(body.get("files") or []) if isinstance(body.get("files"),
                                                                         list) else []
        if up is None or not any(isinstance(f, dict) and "sha256" not in f for f in listed):
            return response
        truth = {f["name"]: f for f in self.received(up)}
        fixed = [truth.get(f.get("name"), f) if isinstance(f, dict) and "sha256" not in f
                 and truth.get(f.get("name"), {}).get("size") == f.get("size") else f
                 for f in listed]
        return ok_or(upstream, request.with_json({**body, "files": fixed}), response)


@mutant
class ChunkedLongPutCut(Tracked):
    """A PUT of a declared file is checked against ``Content-Length``; a chunked body is
    read up to the declared size and the rest dropped: it answers 200."""

    name = "ver-chunked-put-longer-than-declared-cut-and-taken"
    clause = "VER-4.e"
    summary = "a chunked PUT longer than the file's declared size stores its prefix, 200"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        chunked = "chunked" in (request.header("Transfer-Encoding") or "").lower()
        if request.kind != "data" or request.method != "PUT" or not chunked:
            return None
        with self.lock:
            up = self.t.uploads.get(self.t.paths.get(request.path) or "")
        name = up.paths.get(request.path) if up else None
        spec = next((f for f in (up.write.get("files") or []) if isinstance(f, dict)
                     and f.get("name") == name), None) if up else None
        size = spec.get("size") if isinstance(spec, dict) else None
        if not isinstance(size, int) or len(request.body) <= size:
            return None
        return Request("PUT", request.path, request.query, (), request.body[:size])


@mutant
class IncompleteCommitDropsTheUpload(Tracked):
    """A commit refused 409 ``incomplete`` for a declared file not yet PUT discards the
    upload: once the file arrives, the next commit is 404."""

    name = "ver-upload-refused-as-incomplete-is-dropped"
    clause = "VER-4.a"
    summary = "after a commit refused for a missing declared file, the upload's commit is 404"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if request.endpoint != "versions/commit":
            return None
        with self.lock:
            dropped = body_of(request).get("upload") in self.state.get("dropped", set())
        return Response.error(404, "not_found", "no such upload") if dropped else None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint == "versions/commit" and error_code(response) == "incomplete" \
                and not body.get("files"):
            with self.lock:
                self.state.setdefault("dropped", set()).add(body.get("upload"))
        return response


@mutant
class JoiningWriteSizeUnchecked(Tracked):
    """A write that joins an upload skips the size limit: a declared size over it is
    taken (the file's URL then takes what the upstream allows)."""

    name = "ver-declared-size-over-the-limit-in-a-joining-write-accepted"
    clause = "VER-4.e"
    summary = "a write naming an upload accepts a declared size over the limit"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        files = body.get("files")
        if request.endpoint != "versions/write" or body.get("upload") is None \
                or not isinstance(files, list):
            return None
        with self.lock:
            known = str(body.get("upload")) in self.t.uploads
        big = [f for f in files if isinstance(f, dict) and isinstance(f.get("size"), int)
               and f["size"] > 2**40]
        if not known or not big:
            return None
        small = [{**f, "size": 1} if f in big else f for f in files]
        return request.with_json({**body, "files": small})


def _unknown_artifact(upstream: Upstream, request: Request, artifact: object) -> bool:
    """Whether ``artifacts/read`` of ``artifact`` (with the request's key) is 404."""
    got = upstream.send(Request("GET", "/api/v1/artifacts/read", (("artifact", str(artifact)),),
                                tuple((k, v) for k, v in request.headers
                                      if k.lower() == "authorization")))
    return got.status == 404


@mutant
class UnknownArtifactBeforeBadToken(Tracked):
    """A write, commit or delete loads the artifact before it checks the token: naming an
    artifact that does not exist, with another artifact's token, gets 404."""

    name = "ver-write-commit-or-delete-of-an-unknown-artifact-with-a-foreign-token-gets-404"
    clause = "VER-6.f"
    summary = "a write, commit or delete naming a missing artifact gets 404 before its 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint not in ("versions/write", "versions/commit", "versions/delete") \
                or error_code(response) != "invalid_argument":
            return response
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
        if info is None or info.artifact == body.get("artifact") \
                or not _unknown_artifact(upstream, request, body.get("artifact")):
            return response
        return Response.error(404, "not_found", "no such artifact")


@mutant
class UnknownArtifactBeforeBadVersion(Tracked):
    """A read loads the artifact before it checks the version name: a malformed version of
    an artifact that does not exist gets 404."""

    name = "read-malformed-version-of-an-unknown-artifact-gets-404"
    clause = "VER-1.a"
    summary = "versions/read of a malformed version of a missing artifact gets 404, not 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/read" or error_code(response) != "invalid_argument" \
                or not _unknown_artifact(upstream, request, request.arg("artifact")):
            return response
        return Response.error(404, "not_found", "no such artifact")
