"""Mutants of streamed files (VER-6): a PUT that does not say what it received, a chunked
PUT refused, a later PUT that replaces nothing, a commit that fills in or forgives its list,
an upload spoiled by a refused commit, and a limit that is off or replaces the file."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.tracking import Tracked, UploadInfo, body_of


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class StreamBook(Tracked):
    """Knows which data PUTs are of streamed files (declared by name alone)."""

    def streamed_put(self, request: Request) -> tuple[UploadInfo, str] | None:
        """The upload and file name of a PUT to a streamed file's URL, else None."""
        if request.kind != "data" or request.method != "PUT":
            return None
        with self.lock:
            up_id = self.t.paths.get(request.path)
            up = self.t.uploads.get(up_id) if up_id else None
        if up is None:
            return None
        name = up.paths.get(request.path)
        spec = next((f for f in up.write.get("files") or [] if f.get("name") == name), None)
        if not isinstance(spec, dict) or "size" in spec:
            return None
        return up, str(name)

    def received(self, up: UploadInfo) -> list[dict[str, Any]]:
        """The commit list of what the streamed files of ``up`` last received."""
        with self.lock:
            puts = dict(up.puts)
        return [{"name": n, "size": len(d), "sha256": _sha(d)} for n, d in puts.items()
                if not any(f.get("name") == n and "size" in f
                           for f in up.write.get("files") or [])]

    def upload_of(self, request: Request) -> UploadInfo | None:
        body = body_of(request)
        with self.lock:
            return self.t.uploads.get(str(body.get("upload")))


@mutant
class PutAnswersNothing(StreamBook):
    name = "ver-streamed-put-answers-an-empty-body"
    clause = "VER-6.a"
    summary = "a streamed file's PUT answers 200 with no name, size or sha256"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if response.ok and self.streamed_put(request) is not None:
            return response.with_json({})
        return response


@mutant
class PutAnswersSizeOnly(StreamBook):
    name = "ver-streamed-put-answers-the-sha256-of-nothing"
    clause = "VER-6.a"
    summary = "a streamed file's PUT answers the right size and the sha256 of no bytes"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        if isinstance(body, dict) and self.streamed_put(request) is not None:
            return response.with_json({**body, "sha256": _sha(b"")})
        return response


@mutant
class ChunkedPutRefused(StreamBook):
    name = "ver-chunked-put-refused-with-411"
    clause = "VER-6.a"
    summary = "a PUT without a Content-Length (chunked) gets 411 Length Required"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        chunked = "chunked" in (request.header("Transfer-Encoding") or "").lower()
        if request.kind == "data" and request.method == "PUT" and chunked:
            return Response.error(411, "length_required", "a PUT needs a Content-Length")
        return None


@mutant
class LaterPutKeepsTheFirst(StreamBook):
    """A second PUT of a streamed file answers as if it had replaced the first, but the
    file keeps the first PUT's bytes."""

    name = "ver-streamed-put-again-keeps-the-first-bytes"
    clause = "VER-6.b"
    summary = "a later PUT of a streamed file before the commit answers 200 and changes nothing"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        found = self.streamed_put(request)
        if found is None:
            return None
        up, name = found
        with self.lock:
            earlier = name in up.puts
        if not earlier:
            return None
        got = {"name": name, "size": len(request.body), "sha256": _sha(request.body)}
        return Response(200, (("Content-Type", "application/json"),)).with_json(got)


@mutant
class CommitFillsInTheList(StreamBook):
    """A commit whose list leaves a streamed file out (or has no list) is completed with
    what the file received."""

    name = "ver-commit-list-missing-a-streamed-file-filled-in"
    clause = "VER-6.c"
    summary = "a commit that does not list a streamed file takes the bytes it received"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "incomplete":
            return response
        up = self.upload_of(request)
        if up is None:
            return response
        body = body_of(request)
        listed = [f for f in body.get("files") or [] if isinstance(f, dict)]
        names = {f.get("name") for f in listed}
        extra = [f for f in self.received(up) if f["name"] not in names]
        if not extra:
            return response
        return ok_or(upstream, request.with_json({**body, "files": listed + extra}), response)


@mutant
class CommitForgivesWrongValues(StreamBook):
    """A commit that lists a streamed file with another size or sha256 than it received
    takes the received values."""

    name = "ver-commit-list-with-wrong-values-takes-the-received-ones"
    clause = "VER-6.c"
    summary = "a commit listing a streamed file with a wrong size or sha256 succeeds"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "incomplete":
            return response
        up = self.upload_of(request)
        body = body_of(request)
        listed = [f for f in body.get("files") or [] if isinstance(f, dict)]
        if up is None or not listed:
            return response
        truth = {f["name"]: f for f in self.received(up)}
        fixed = [truth.get(f.get("name"), f) for f in listed]
        if fixed == listed:
            return response
        return ok_or(upstream, request.with_json({**body, "files": fixed}), response)


@mutant
class RefusedCommitSpoilsTheUpload(StreamBook):
    """After a commit refused for its list, the upload cannot be committed any more."""

    name = "ver-upload-refused-for-its-list-never-commits"
    clause = "VER-6.c"
    summary = "after a commit refused 409 incomplete for its list, every commit is refused"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.endpoint != "versions/commit":
            return None
        with self.lock:
            spoiled = body_of(request).get("upload") in self.state.get("spoiled", set())
        if spoiled:
            return Response.error(409, "incomplete", "the upload was refused before")
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint == "versions/commit" and error_code(response) == "incomplete" \
                and isinstance(body.get("files"), list) and body["files"]:
            with self.lock:
                self.state.setdefault("spoiled", set()).add(body.get("upload"))
        return response


@mutant
class ForeignNamesIgnored(StreamBook):
    """A commit list naming files that are not of the upload is taken without them."""

    name = "ver-commit-list-naming-other-files-ignores-them"
    clause = "VER-6.d"
    summary = "a commit listing a file that is not of the upload succeeds without it"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "invalid_argument":
            return response
        up = self.upload_of(request)
        body = body_of(request)
        listed = [f for f in body.get("files") or [] if isinstance(f, dict)]
        if up is None:
            return response
        ours = {f.get("name") for f in up.write.get("files") or []}
        kept = [f for f in listed if f.get("name") in ours]
        if len(kept) == len(listed):
            return response
        return ok_or(upstream, request.with_json({**body, "files": kept}), response)


@mutant
class NameListedTwiceIncomplete(StreamBook):
    name = "ver-commit-list-naming-a-file-twice-gets-409"
    clause = "VER-6.d"
    summary = "a commit listing one file twice gets 409 incomplete instead of 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "invalid_argument":
            return response
        names = [f.get("name") for f in body_of(request).get("files") or []
                 if isinstance(f, dict)]
        if len(set(names)) < len(names):
            return Response.error(409, "incomplete", "a file is listed twice")
        return response


class LimitBook(StreamBook):
    """Learns the limit from the writes it sees: the largest declared size accepted below
    the smallest one refused with 413."""

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        if request.endpoint != "versions/write":
            return
        sizes = [f.get("size") for f in body_of(request).get("files") or []
                 if isinstance(f, dict) and isinstance(f.get("size"), int)]
        if len(sizes) != 1:
            return
        key = "refused" if response.status == 413 else "taken" if response.ok else None
        if key:
            old = self.state.get(key)
            pick = min if key == "refused" else max
            self.state[key] = sizes[0] if old is None else pick(old, sizes[0])

    def limit(self) -> int | None:
        with self.lock:
            refused, taken = self.state.get("refused"), self.state.get("taken")
        return taken if refused is not None and taken is not None and taken + 1 == refused \
            else None


@mutant
class PastLimitTaken(LimitBook):
    """A streamed PUT past the limit answers 200 with what it was sent (nothing stored)."""

    name = "ver-streamed-put-past-the-limit-answers-200"
    clause = "VER-6.e"
    summary = "a streamed file's PUT past the limit answers 200 instead of 413"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        found = self.streamed_put(request)
        if response.status != 413 or found is None:
            return response
        got = {"name": found[1], "size": len(request.body), "sha256": _sha(request.body)}
        return Response(200, (("Content-Type", "application/json"),)).with_json(got)


@mutant
class PastLimitEmptiesTheFile(LimitBook):
    """A streamed PUT past the limit is refused, but the file has been emptied by then."""

    name = "ver-streamed-put-past-the-limit-empties-the-file"
    clause = "VER-6.e"
    summary = "a refused streamed PUT past the limit leaves the file with no bytes"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if response.status == 413 and self.streamed_put(request) is not None:
            upstream.send(Request("PUT", request.path, request.query, (), b""))
        return response


@mutant
class LimitItselfRefused(LimitBook):
    """A streamed PUT of exactly the limit is refused (the limit checked with >=)."""

    name = "ver-streamed-put-of-exactly-the-limit-gets-413"
    clause = "VER-6.e"
    summary = "a streamed file's PUT of exactly the limit's bytes gets 413"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        limit = self.limit()
        if limit is not None and len(request.body) == limit \
                and self.streamed_put(request) is not None:
            return Response.error(413, "payload_too_large", "the body reaches the limit")
        return None


@mutant
class LatePutChangesTheVersion(StreamBook):
    """A PUT to a file's URL after its upload was committed changes what the committed
    version's URLs serve (its listed size and sha256 stay)."""

    name = "ver-put-after-the-commit-changes-the-versions-bytes"
    clause = "VER-6.b"
    summary = "a PUT after the commit makes the version's URLs serve the new bytes"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.method == "GET":
            with self.lock:
                key = self.state.get("reads", {}).get(request.path)
                late = self.state.get("late", {}).get(key) if key else None
            if late is not None:
                return Response(200, (("Content-Type", "application/octet-stream"),), late)
        return super().handle(request, upstream)

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if request.kind == "data" and request.method == "PUT":
            with self.lock:
                up_id = self.t.paths.get(request.path)
                up = self.t.uploads.get(up_id) if up_id else None
                made = self.state.get("made", {}).get(up_id)
            if up is not None and made is not None:
                with self.lock:
                    self.state.setdefault("late", {})[
                        (up.artifact, made, up.paths.get(request.path))] = request.body
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if not isinstance(data, dict):
            return response
        if request.endpoint == "versions/commit":
            with self.lock:
                self.state.setdefault("made", {})[body_of(request).get("upload")] = \
                    data.get("version")
        elif request.endpoint == "versions/read":
            with self.lock:
                reads = self.state.setdefault("reads", {})
                for f in data.get("files") or []:
                    if isinstance(f, dict) and isinstance(f.get("url"), str):
                        reads[urlsplit(f["url"]).path] = (data.get("artifact"),
                                                          data.get("version"), f.get("name"))
        return response


@mutant
class EmptyPutNotStored(StreamBook):
    """A streamed PUT with ``Content-Length: 0`` answers as if it stored an empty file, but
    the file stays never uploaded (a body of no bytes taken for no body)."""

    name = "ver-streamed-put-of-no-bytes-with-a-length-not-stored"
    clause = "VER-6.a"
    summary = "a streamed file's PUT with Content-Length: 0 answers 200 and stores nothing"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        found = self.streamed_put(request)
        if found is None or request.body or request.header("Content-Length") != "0":
            return None
        got = {"name": found[1], "size": 0, "sha256": _sha(b"")}
        return Response(200, (("Content-Type", "application/json"),)).with_json(got)
