"""Mutants of VER-6.f, which error wins when a write, commit or delete is wrong in several
ways: each checks the fence (409) or the upload or version (404) before what makes the
request malformed (400), or the fence before what it names (404)."""

from __future__ import annotations

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import Tracked, body_of


class _FenceFirst(Tracked):
    """On a reply of ``status`` to one of ``endpoints`` with a token older than the
    artifact's newest open, answer 409 fenced instead."""

    status = 400
    endpoints: tuple[str, ...] = ()

    def fenced(self, request: Request) -> bool:
        body = body_of(request)
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
            newest = self.t.newest.get(str(body.get("artifact")))
        return info is not None and newest is not None and info.artifact == newest.artifact \
            and info.epoch < newest.epoch

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint in self.endpoints and response.status == self.status \
                and self.fenced(request):
            return Response.error(409, "fenced", "the token is of an older epoch")
        return response


@mutant
class WriteFencedBeforeMalformed(_FenceFirst):
    name = "ver-write-malformed-with-a-fenced-token-gets-409"
    clause = "VER-6.f"
    summary = "a malformed write with a fenced token gets 409 fenced before its 400"
    endpoints = ("versions/write",)


@mutant
class WriteFencedBeforeUnknownUpload(_FenceFirst):
    name = "ver-write-into-an-unknown-upload-with-a-fenced-token-gets-409"
    clause = "VER-6.f"
    summary = "a write naming an unknown upload with a fenced token gets 409 before its 404"
    status = 404
    endpoints = ("versions/write",)


@mutant
class CommitFencedBeforeUnknownUpload(_FenceFirst):
    name = "ver-commit-of-an-unknown-upload-with-a-fenced-token-gets-409"
    clause = "VER-6.f"
    summary = "a commit of an unknown upload with a fenced token gets 409 before its 404"
    status = 404
    endpoints = ("versions/commit",)


@mutant
class DeleteFencedBeforeUnknownVersion(_FenceFirst):
    name = "ver-delete-of-an-unknown-version-with-a-fenced-token-gets-409"
    clause = "VER-6.f"
    summary = "a delete of an unknown version with a fenced token gets 409 before its 404"
    status = 404
    endpoints = ("versions/delete",)


@mutant
class DeleteFencedBeforeMalformed(_FenceFirst):
    name = "ver-delete-of-a-malformed-version-with-a-fenced-token-gets-409"
    clause = "VER-6.f"
    summary = "a delete of a malformed version with a fenced token gets 409 before its 400"
    endpoints = ("versions/delete",)


@mutant
class IncompleteBeforeBadList(Tracked):
    """A commit whose list is malformed (a foreign or repeated name) of an upload that still
    lacks a file answers 409 incomplete before its 400."""

    name = "ver-commit-with-a-bad-list-of-an-incomplete-upload-gets-409"
    clause = "VER-6.f"
    summary = "a commit listing a foreign name, of an upload lacking a file, gets 409 first"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or response.status != 400:
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
            incomplete = up is not None and not up.complete
        if incomplete and isinstance(body.get("files"), list):
            return Response.error(409, "incomplete", "a file of the upload is missing")
        return response


@mutant
class UnknownUploadBeforeMalformedWrite(Tracked):
    """A malformed write naming an upload nobody started answers 404 before its 400."""

    name = "ver-write-malformed-into-an-unknown-upload-gets-404"
    clause = "VER-6.f"
    summary = "a malformed write naming an unknown upload gets 404 not_found before its 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        upload = body.get("upload")
        if request.endpoint != "versions/write" or response.status != 400 \
                or not isinstance(upload, str):
            return response
        with self.lock:
            known = upload in self.t.uploads
        if not known:
            return Response.error(404, "not_found", "no such upload")
        return response


@mutant
class CommittedUploadBeforeMalformedWrite(Tracked):
    """A write into a committed upload that names another version, or a file it has,
    answers the committed upload's 404 before the write's own 400."""

    name = "ver-write-wrong-into-a-committed-upload-gets-404"
    clause = "VER-6.f"
    summary = "a write naming another version or a name twice, into a committed upload, gets 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        upload = body_of(request).get("upload")
        if request.endpoint != "versions/write" or response.status != 400 \
                or not isinstance(upload, str):
            return response
        with self.lock:
            closed = upload in self.t.closed
        if closed:
            return Response.error(404, "not_found", "the upload is committed")
        return response

