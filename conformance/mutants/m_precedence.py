"""Mutants of which error wins: each checks its request in the wrong order, answering the
error a writer with every right would get (400, 404) where the contract puts the key first
(401 for no valid key, 403 for a key whose scope does not cover the artifact)."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import (
    Tracked,
    artifact_info,
    artifact_of,
    body_of,
    key_of,
    with_key,
)

READS = ("versions/read", "versions/list", "artifacts/read")


class _Reordered(Tracked):
    """On a reply of ``status``, resend the request with a key that worked; when that
    answers one of ``codes``, return it instead (the check done before the key's)."""

    status = 401
    codes: tuple[int, ...] = (400,)
    endpoints: tuple[str, ...] = ()

    def applies(self, request: Request) -> bool:
        return True

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint not in self.endpoints or response.status != self.status \
                or not self.applies(request):
            return response
        with self.lock:
            key = self.t.good_key(artifact_of(request))
        if key is None or key == key_of(request):
            return response
        again = upstream.send(with_key(request, key))
        return again if again.status in self.codes else response


@mutant
class MalformedBeforeKey(_Reordered):
    """Bodies and names are validated before the key: a malformed request with an unknown
    key gets 400."""

    name = "auth-unknown-key-with-malformed-request-gets-400"
    clause = "AUTH-1.b"
    summary = "a malformed request with a well-formed unknown key answers 400, not 401"
    endpoints = ("artifacts/open", "versions/write", "versions/read", "versions/list")

    def applies(self, request: Request) -> bool:
        return key_of(request) is not None


@mutant
class UnknownArtifactBeforeNoKey(_Reordered):
    """A read without any Authorization header of an artifact that does not exist answers
    404 (existence looked up first)."""

    name = "auth-no-key-read-of-unknown-artifact-gets-404"
    clause = "AUTH-1.a"
    summary = "a read with no Authorization header of an unknown artifact or version answers 404"
    codes = (404,)
    endpoints = READS

    def applies(self, request: Request) -> bool:
        return request.header("Authorization") is None


@mutant
class UnknownArtifactBeforeScope(_Reordered):
    """A key refused for an artifact outside its prefixes gets 404 when the artifact does
    not exist (the scope is only checked on artifacts that exist)."""

    name = "auth-scope-of-unknown-artifact-outside-prefixes-gets-404"
    clause = "AUTH-3.b"
    summary = "reads of an artifact outside the key's prefixes that does not exist answer 404"
    status = 403
    codes = (404,)
    endpoints = (*READS, "usage/read")

    def applies(self, request: Request) -> bool:
        return bool(artifact_of(request))


@mutant
class ReaderWriteBadTokenGets400(_Reordered):
    """A read-only key's write with an unknown token answers 400 (the token is checked
    before the scope)."""

    name = "auth-read-key-write-with-unknown-token-gets-400"
    clause = "AUTH-3.a"
    summary = "a write by a read-only key with an unknown token answers 400, not 403"
    status = 403
    codes = (400,)
    endpoints = ("versions/write",)

    def applies(self, request: Request) -> bool:
        with self.lock:
            return not any(i.token == body_of(request).get("token")
                           for i in self.t.tokens.values())


@mutant
class ReaderCommitUnknownUploadGets404(_Reordered):
    """A read-only key's commit of an unknown upload answers 404."""

    name = "auth-read-key-commit-of-unknown-upload-gets-404"
    clause = "AUTH-3.a"
    summary = "a commit by a read-only key of an unknown upload answers 404, not 403"
    status = 403
    codes = (404,)
    endpoints = ("versions/commit",)

    def applies(self, request: Request) -> bool:
        with self.lock:
            return body_of(request).get("upload") not in self.t.uploads


def _exists(upstream: Upstream, key: str | None, artifact: Any) -> bool:
    return isinstance(artifact, str) and artifact_info(upstream, key, artifact) is not None


@mutant
class ReaderOpenOfMissingGets404(Tracked):
    """An open by a read-only key of an artifact that does not exist, with resume latest,
    answers 404 not_found (nothing to read) instead of 403."""

    name = "auth-read-key-open-latest-of-missing-artifact-gets-404"
    clause = "AUTH-2.c"
    summary = "an open by a key that cannot write a missing artifact answers 404, not 403"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint != "artifacts/open" or response.status != 403 \
                or body.get("resume") != "latest":
            return response
        with self.lock:
            key = self.t.good_key()
        if key is None or key == key_of(request) or _exists(upstream, key, body.get("artifact")):
            return response
        return Response.error(404, "not_found", f"no artifact {body.get('artifact')}")
