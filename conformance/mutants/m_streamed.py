"""Mutants of streamed files (VER-6): a PUT that does not say what it received, a chunked
PUT refused, a later PUT that replaces nothing, a commit that fills in or forgives its list,
an upload spoiled by a refused commit, and a limit that is off or replaces the file."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.rows import Bend, On, Row, Turn, error, rows
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
        return received(up, self.lock)

    def upload_of(self, request: Request) -> UploadInfo | None:
        with self.lock:
            return self.t.uploads.get(str(body_of(request).get("upload")))


def received(up: UploadInfo, lock: threading.Lock) -> list[dict[str, Any]]:
    """The commit list of what the streamed files of ``up`` last received."""
    with lock:
        puts = dict(up.puts)
    return [{"name": n, "size": len(d), "sha256": _sha(d)} for n, d in puts.items()
            if not any(f.get("name") == n and "size" in f for f in up.write.get("files") or [])]


Listed = list[dict[str, Any]]


def commit_list_retried(fix: Callable[[Turn, UploadInfo, Listed], Listed | None]) -> Bend:
    """A refused commit of an upload the proxy saw written is sent again with the list
    ``fix`` makes of its list (None: the refusal stands); that reply if it succeeds."""

    def bend(reply: Response, turn: Turn) -> Response:
        sent = body_of(turn.request)
        with turn.lock:
            up = turn.t.uploads.get(str(sent.get("upload")))
        listed = [f for f in sent.get("files") or [] if isinstance(f, dict)]
        fixed = None if up is None else fix(turn, up, listed)
        if fixed is None:
            return reply
        return ok_or(turn.upstream, turn.request.with_json({**sent, "files": fixed}), reply)

    return bend


def _filled_in(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    names = {f.get("name") for f in listed}
    extra = [f for f in received(up, turn.lock) if f["name"] not in names]
    return listed + extra if extra else None


def _received_values(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    truth = {f["name"]: f for f in received(up, turn.lock)}
    fixed = [truth.get(f.get("name"), f) for f in listed]
    return fixed if listed and fixed != listed else None


def _without_other_files(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    ours = {f.get("name") for f in up.write.get("files") or []}
    kept = [f for f in listed if f.get("name") in ours]
    return kept if len(kept) != len(listed) else None


def _named_twice(request: Request) -> bool:
    names = [f.get("name") for f in body_of(request).get("files") or [] if isinstance(f, dict)]
    return len(set(names)) < len(names)


COMMIT = ("versions/commit",)

rows(
    # A commit whose list leaves a streamed file out (or has no list) is completed with
    # what the file received.
    Row("ver-commit-list-missing-a-streamed-file-filled-in", "VER-6.c",
        "a commit that does not list a streamed file takes the bytes it received",
        On(COMMIT, replies="error", code="incomplete"), answer=commit_list_retried(_filled_in),
        tracked=True),
    # A commit that lists a streamed file with another size or sha256 than it received
    # takes the received values.
    Row("ver-commit-list-with-wrong-values-takes-the-received-ones", "VER-6.c",
        "a commit listing a streamed file with a wrong size or sha256 succeeds",
        On(COMMIT, replies="error", code="incomplete"),
        answer=commit_list_retried(_received_values), tracked=True),
    # A commit list naming files that are not of the upload is taken without them.
    Row("ver-commit-list-naming-other-files-ignores-them", "VER-6.d",
        "a commit listing a file that is not of the upload succeeds without it",
        On(COMMIT, replies="error", code="invalid_argument"),
        answer=commit_list_retried(_without_other_files), tracked=True),
    Row("ver-commit-list-naming-a-file-twice-gets-409", "VER-6.d",
        "a commit listing one file twice gets 409 incomplete instead of 400",
        On(COMMIT, replies="error", code="invalid_argument", when=_named_twice),
        answer=error(409, "incomplete", "a file is listed twice")),
)


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
