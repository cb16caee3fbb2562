"""Mutants of VER-1, VER-3, VER-4, VER-5 and VER-7 written from the contract alone: steps
compared with an uncommitted upload or a fork's source, file names checked on one code path
only, a joined write of another version let in, a joined version's size, and deletes that
hide a version name everywhere, answer for a staged version, or take a foreign token."""

from __future__ import annotations

import re
from typing import Any

from conformance.mutants.base import Mutant, Request, Response, Upstream, error_code, mutant
from conformance.mutants.m_versions import _safe_segments, decoded, encode_name
from conformance.mutants.tracking import Tracked, body_of, key_of, versions_of

_STEP = re.compile(r"step-(\d{8})")


def step_of(version: Any) -> int | None:
    """The step of a well-formed version name, else None."""
    m = _STEP.fullmatch(version) if isinstance(version, str) else None
    return int(m[1]) if m else None


def _writing(request: Request) -> bool:
    return request.endpoint == "versions/write" and request.method == "POST"


def _deleting(request: Request) -> bool:
    return request.endpoint == "versions/delete" and request.method == "POST"


def deleted_answer(body: dict[str, Any]) -> Response:
    reply = {"artifact": body.get("artifact"), "version": body.get("version"),
             "deleted_at": "2026-12-02T08:00:00Z"}
    return Response(200, (("Content-Type", "application/json"),)).with_json(reply)


# --- VER-1 -------------------------------------------------------------------------------


class _LenientWhere(Mutant):
    """A write whose unsafe file names ``allows`` lets through is accepted: the names are
    hidden from the upstream behind a safe spelling and decoded in its replies."""

    def allows(self, body: dict[str, Any], spec: dict[str, Any]) -> bool:
        return False

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = request.json()
        if not _writing(request) or not isinstance(body, dict) \
                or not isinstance(body.get("files"), list):
            return decoded(upstream.send(request))
        files = [dict(f) if isinstance(f, dict) else f for f in body["files"]]
        changed = False
        for f in files:
            name = f.get("name") if isinstance(f, dict) else None
            if isinstance(name, str) and not _safe_segments(name) and self.allows(body, f):
                f["name"], changed = encode_name(name), True
        sent = request.with_json({**body, "files": files}) if changed else request
        return decoded(upstream.send(sent))


@mutant
class StreamedNamesUnchecked(_LenientWhere):
    """Streamed files are parsed by a code path of their own that skips the name check."""

    name = "ver-file-name-of-a-streamed-file-unchecked"
    clause = "VER-1.b"
    summary = "a '..', '.', empty or absolute segment in a streamed file's name is accepted"

    def allows(self, body: dict[str, Any], spec: dict[str, Any]) -> bool:
        return "size" not in spec and "sha256" not in spec


@mutant
class JoiningWriteNamesUnchecked(_LenientWhere):
    """A write that joins an upload (VER-5) checks no file name."""

    name = "ver-file-name-in-a-joining-write-unchecked"
    clause = "VER-1.b"
    summary = "a write naming an upload accepts file names with '..', '.' or empty segments"

    def allows(self, body: dict[str, Any], spec: dict[str, Any]) -> bool:
        return body.get("upload") is not None


@mutant
class SizedAndStreamedTwiceAccepted(Mutant):
    """The duplicate check compares declared (sized) names only: a name declared with a
    size and again by name alone passes, the streamed declaration dropped."""

    name = "ver-write-of-a-name-sized-and-streamed-accepted"
    clause = "VER-1.c"
    summary = "a write declaring one name with a size and again by name alone is accepted"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = body_of(request)
        files = body.get("files")
        if not _writing(request) or not isinstance(files, list):
            return upstream.send(request)
        sized = {f.get("name") for f in files if isinstance(f, dict) and "size" in f}
        kept = [f for f in files if not (isinstance(f, dict) and "size" not in f
                                         and f.get("name") in sized)]
        if len(kept) == len(files):
            return upstream.send(request)
        return upstream.send(request.with_json({**body, "files": kept}))


# --- VER-3 / VER-4.c ---------------------------------------------------------------------


@mutant
class UncommittedUploadRaisesTheBar(Tracked):
    """The step check compares with the highest step *written* to the artifact, committed
    or not: an abandoned upload of a higher step blocks every lower one."""

    name = "ver-step-compared-with-an-uncommitted-upload"
    clause = "VER-4.c"
    summary = "a write below an uncommitted upload's step gets 409 not_after_latest"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        body = body_of(request)
        step = step_of(body.get("version"))
        if not _writing(request) or body.get("upload") is not None or step is None:
            return None
        with self.lock:
            staged = [step_of(u.write.get("version")) for u in self.t.uploads.values()
                      if u.artifact == body.get("artifact") and u.upload not in self.t.closed]
        if any(s is not None and s > step for s in staged):
            return Response.error(409, "not_after_latest", "the step is not after the latest")
        return None


@mutant
class ForkSourceStepIsTheFloor(Tracked):
    """A forked artifact without versions of its own takes the fork's source step as its
    latest: a first version at or below it gets 409 ``not_after_latest``."""

    name = "ver-step-of-a-fork-compared-with-its-source-version"
    clause = "VER-3.a"
    summary = "a forked artifact's first version at or below the source's step gets 409"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        body = body_of(request)
        step, art = step_of(body.get("version")), body.get("artifact")
        if not _writing(request) or step is None:
            return None
        with self.lock:
            forks = [o.resume for o in self.t.opens.get(str(art), [])
                     if isinstance(o.resume, str) and o.resume.startswith("o41://")]
        floor = step_of(forks[-1].rsplit("/", 1)[-1]) if forks else None
        if floor is None or step > floor or versions_of(upstream, key_of(request), str(art)):
            return None
        return Response.error(409, "not_after_latest", "the step is not after the fork's")


# --- VER-5 -------------------------------------------------------------------------------


@mutant
class OtherVersionJoinsTheUpload(Tracked):
    """A write naming an upload takes the upload's version, whatever version it names."""

    name = "ver-write-of-another-version-into-an-upload-accepted"
    clause = "VER-5.c"
    summary = "a write of step N naming an upload of step M adds its files to step M"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        if not _writing(request) or step_of(body.get("version")) is None:
            return None
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
        if up is None or up.write.get("version") == body.get("version"):
            return None
        return request.with_json({**body, "version": up.write.get("version")})


@mutant
class JoinedVersionSizedByFirstWrite(Tracked):
    """A Version's ``size`` is the sum of the files of the write that started the upload:
    files joined by later writes are served but left out of the size."""

    name = "ver-size-of-a-joined-version-counts-the-first-write-only"
    clause = "VER-5.a"
    summary = "a Version made by several writes has the size of its first write's files"

    def observe(self, request: Request, response: Response) -> None:
        body = body_of(request)
        reply = response.json() if response.ok else None
        if _writing(request) and isinstance(reply, dict):
            first = self.state.setdefault("first", {})
            if body.get("upload") is None:
                first[str(reply.get("upload"))] = [f for f in body.get("files") or []
                                                   if isinstance(f, dict)]
            else:
                self.state.setdefault("joined", set()).add(str(body.get("upload")))
        if request.endpoint == "versions/commit" and isinstance(reply, dict):
            up = str(body.get("upload"))
            if up in self.state.get("joined", set()):
                names = {f.get("name") for f in self.state.get("first", {}).get(up, [])}
                size = sum(int(f.get("size") or 0) for f in reply.get("files") or []
                           if isinstance(f, dict) and f.get("name") in names)
                self.state.setdefault("size", {})[(reply.get("artifact"),
                                                   reply.get("version"))] = size
        super().observe(request, response)

    def _fix(self, version: Any) -> Any:
        if not isinstance(version, dict):
            return version
        size = self.state.get("size", {}).get((version.get("artifact"), version.get("version")))
        return version if size is None else {**version, "size": size}

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if not isinstance(data, dict) or request.kind != "api":
            return response
        with self.lock:
            if request.endpoint in ("versions/read", "versions/commit"):
                return response.with_json(self._fix(data))
            if request.endpoint == "versions/list":
                rows = [self._fix(v) for v in data.get("versions") or []]
                return response.with_json({**data, "versions": rows})
            if request.endpoint == "artifacts/open" and data.get("resume_from"):
                return response.with_json({**data, "resume_from": self._fix(data["resume_from"])})
        return response


# --- VER-7 -------------------------------------------------------------------------------


@mutant
class DeletedNameHiddenEverywhere(Tracked):
    """Deletions are kept as tombstones keyed by version name alone: a deleted name reads
    404 and is left out of the list in every artifact, not only the one it was deleted in."""

    name = "ver-delete-hides-that-version-name-in-every-artifact"
    clause = "VER-7.a"
    summary = "after a delete of A/step-N, B/step-N reads 404 and leaves B's list too"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if _deleting(request) and response.ok:
            with self.lock:
                self.state.setdefault("gone", {})[str(body.get("version"))] = body.get("artifact")
            return response
        with self.lock:
            gone = dict(self.state.get("gone", {}))
        data = response.json() if response.ok else None
        if not gone or not isinstance(data, dict):
            return response
        if request.endpoint == "versions/read" and data.get("version") in gone \
                and request.arg("version", "latest") != "latest":
            return Response.error(404, "not_found", "no such version")
        if request.endpoint == "versions/list":
            rows = [v for v in data.get("versions") or []
                    if not (isinstance(v, dict) and v.get("version") in gone)]
            return response.with_json({**data, "versions": rows})
        return response


@mutant
class StagedVersionDeleteAnswered(Tracked):
    """A delete of a version that is only being uploaded (written, never committed)
    answers 200, as if it were committed."""

    name = "ver-delete-of-an-uncommitted-version-answers-200"
    clause = "VER-7.d"
    summary = "a delete of a version with an upload but no commit answers 200, not 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not _deleting(request) or response.status != 404:
            return response
        with self.lock:
            staged = any(u.artifact == body.get("artifact") and u.upload not in self.t.closed
                         and u.write.get("version") == body.get("version")
                         for u in self.t.uploads.values())
        return deleted_answer(body) if staged else response


@mutant
class ForeignTokenDeletes(Tracked):
    """A delete checks the token's epoch against the artifact's but not its artifact: a
    token of another artifact, as new as the artifact's newest, deletes."""

    name = "ver-delete-with-another-artifacts-token-done"
    clause = "VER-7.d"
    summary = "a delete with a token of another artifact deletes instead of 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not _deleting(request) or error_code(response) != "invalid_argument" \
                or step_of(body.get("version")) is None:
            return response
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
            newest = self.t.newest.get(str(body.get("artifact")))
        if info is None or newest is None or info.artifact == newest.artifact:
            return response
        again = upstream.send(request.with_json({**body, "token": newest.token}))
        return again if again.ok else response


@mutant
class UnknownTokenDeleteNotFound(Tracked):
    """A delete looks the token up like a version: an unknown token is 404."""

    name = "ver-delete-with-an-unknown-token-gets-404"
    clause = "VER-7.d"
    summary = "a delete with an unknown token answers 404 not_found instead of 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not _deleting(request) or error_code(response) != "invalid_argument" \
                or step_of(body.get("version")) is None:
            return response
        with self.lock:
            known = str(body.get("token")) in self.t.tokens
        return response if known else Response.error(404, "not_found", "no such token")


@mutant
class MalformedDeleteNotFound(Tracked):
    """A delete does not check the version name: a malformed one is simply not found."""

    name = "ver-delete-of-a-malformed-version-gets-404"
    clause = "VER-7.d"
    summary = "a delete of a malformed version name answers 404 not_found instead of 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not _deleting(request) or error_code(response) != "invalid_argument" \
                or step_of(body.get("version")) is not None:
            return response
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
        if info is None or info.artifact != body.get("artifact"):
            return response
        return Response.error(404, "not_found", "no such version")


@mutant
class LatestAfterDeleteSlips(Tracked):
    """Once an artifact had a delete, a read of latest takes the version at the position
    of the new count in the list as it was before the delete: the one below the latest."""

    name = "read-latest-after-a-delete-is-the-version-below-it"
    clause = "READ-1.a"
    summary = "after a delete, versions/read of latest answers the second-highest version"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        art = request.arg("artifact")
        if request.endpoint != "versions/read" or request.arg("version", "latest") != "latest":
            return None
        with self.lock:
            deleted = art in self.state.get("deleted", set())
        rows = versions_of(upstream, key_of(request), str(art)) if deleted else []
        return request.with_query(version=rows[-2]["version"]) if len(rows) >= 2 else None

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        if _deleting(request) and response.ok:
            self.state.setdefault("deleted", set()).add(body_of(request).get("artifact"))
