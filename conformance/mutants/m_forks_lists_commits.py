"""Mutants of reads around forks and lists written from the contract alone: a fork's record
of its source lost when the source version is deleted (a foreign key set to null), a fork
with no version of its own read at latest as its source's version, and listed versions
given a route as if read where they were written although a list has no reader's place;
a commit that checks only the first write's streamed files against its list, or answers
the first write's files only, or streamed files without size; and refused deletes and
commits that leave a claim on their step behind."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.m_streamed import StreamBook
from conformance.mutants.tracking import Tracked, api_get, body_of, key_of


@mutant
class ForkedFromNulledByDelete(Tracked):
    """``forked_from`` points at the source version's row: deleting that version sets it
    to null (ON DELETE SET NULL)."""

    name = "fork-forked-from-null-once-the-source-version-is-deleted"
    clause = "FORK-2.b"
    summary = "artifacts/read answers forked_from null after the source version's delete"

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        body = body_of(request)
        if request.endpoint == "versions/delete" and response.ok:
            self.state.setdefault("gone", set()).add(
                (str(body.get("artifact")), str(body.get("version"))))

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data: Any = response.json() if response.ok else None
        if request.endpoint != "artifacts/read" or not isinstance(data, dict) \
                or not isinstance(data.get("forked_from"), dict):
            return response
        src = data["forked_from"]
        with self.lock:
            gone = (str(src.get("artifact")), str(src.get("version"))) in \
                self.state.get("gone", set())
        return response.with_json({**data, "forked_from": None}) if gone else response


@mutant
class ForkLatestIsTheSource(Tracked):
    """A read of latest of a forked artifact with no version of its own answers the fork's
    source version (the fork point taken as the artifact's first checkpoint)."""

    name = "read-latest-of-a-fork-without-versions-gives-the-source-version"
    clause = "READ-1.a"
    summary = "versions/read of latest of a fork with no versions answers the source's version"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/read" or response.status != 404 \
                or request.arg("version", "latest") != "latest":
            return response
        state = api_get(upstream, "artifacts/read", key_of(request),
                        artifact=str(request.arg("artifact")))
        data = state.json() if state.ok else None
        src = data.get("forked_from") if isinstance(data, dict) else None
        if not isinstance(src, dict) or data.get("latest") is not None:
            return response
        query = {k: v for k, v in request.query if k not in ("artifact", "version")}
        got = api_get(upstream, "versions/read", key_of(request), artifact=str(src["artifact"]),
                      version=str(src["version"]), **query)
        return got if got.ok else response


@mutant
class ListedRoutesOfTheWriter(Tracked):
    """``versions/list`` gives each version a route as if read where it was written
    (``local``, not cross-cloud), though a list names no reader's place: they must be null."""

    name = "read-list-routes-relative-to-the-writer"
    clause = "READ-1.c"
    summary = "versions/list rows carry route local and cross_cloud false, not null"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data: Any = response.json() if response.ok else None
        if request.endpoint != "versions/list" or not isinstance(data, dict):
            return response
        rows = [{**v, "route": "local", "cross_cloud": False}
                if isinstance(v, dict) and v.get("route") is None else v
                for v in data.get("versions") or []]
        return response.with_json({**data, "versions": rows})


class FirstWriteNames(Tracked):
    """Keeps, per upload, the file names of the write that started it (``state["first"]``):
    what a mutant that forgets the joining writes still knows."""

    def observe(self, request: Request, response: Response) -> None:
        body = body_of(request)
        if request.endpoint == "versions/write" and response.ok and body.get("upload") is None:
            reply = response.json()
            if isinstance(reply, dict):
                self.state.setdefault("first", {})[str(reply.get("upload"))] = {
                    f.get("name") for f in body.get("files") or [] if isinstance(f, dict)}
        super().observe(request, response)


@mutant
class JoinedStreamedFilesFilledIn(FirstWriteNames, StreamBook):
    """The commit checks its list against the streamed files of the write that started the
    upload: a joining write's streamed file left out of the list is taken as received."""

    name = "ver-commit-list-checks-the-first-writes-streamed-files-only"
    clause = "VER-5.e"
    summary = "a joining write's streamed file missing from the commit list still commits"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "incomplete":
            return response
        up = self.upload_of(request)
        body = body_of(request)
        if up is None:
            return response
        with self.lock:
            first = set(self.state.get("first", {}).get(up.upload, set()))
        listed = [f for f in body.get("files") or [] if isinstance(f, dict)]
        names = {f.get("name") for f in listed}
        extra = [f for f in self.received(up) if f["name"] not in names | first]
        if not extra:
            return response
        return ok_or(upstream, request.with_json({**body, "files": listed + extra}), response)


class _Claims(Tracked):
    """Answers a write of a version this mutant holds as claimed with 409
    ``version_exists``, as an implementation that keeps a row behind for it would."""

    def claim(self, artifact: object, version: object) -> None:
        with self.lock:
            self.state.setdefault("claimed", set()).add((str(artifact), str(version)))

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        body = body_of(request)
        if request.endpoint != "versions/write" or body.get("upload") is not None:
            return None
        with self.lock:
            claimed = (str(body.get("artifact")), str(body.get("version"))) in \
                self.state.get("claimed", set())
        if claimed:
            return Response.error(409, "version_exists", "the version was taken")
        return None


@mutant
class RefusedDeleteClaimsTheStep(_Claims):
    """A delete of a version that does not exist is refused 404, but leaves a tombstone
    behind: that step can then never be written."""

    name = "ver-delete-refused-as-unknown-still-tombstones-that-step"
    clause = "VER-7.d"
    summary = "after a delete of an unknown step gets 404, writing that step gets 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint == "versions/delete" and response.status == 404:
            self.claim(body.get("artifact"), body.get("version"))
        return response


@mutant
class RefusedCommitClaimsTheVersion(_Claims):
    """A commit refused 409 ``incomplete`` keeps the version row it inserted before the
    check: another upload of that version can no longer be written."""

    name = "ver-commit-refused-as-incomplete-still-claims-its-version"
    clause = "VER-4.a"
    summary = "after a commit of step N is refused incomplete, a new write of step N gets 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/commit" and error_code(response) == "incomplete":
            with self.lock:
                up = self.t.uploads.get(str(body_of(request).get("upload")))
            if up is not None:
                self.claim(up.artifact, up.write.get("version"))
        return response


@mutant
class CommitReplyOfTheFirstWrite(FirstWriteNames):
    """The commit answers the Version as the first write declared it: a joining write's
    files are left out of its ``files`` (the stored version has them all)."""

    name = "ver-commit-reply-lists-the-first-writes-files-only"
    clause = "VER-5.a"
    summary = "the commit of a joined upload answers files of the first write only"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data: Any = response.json() if response.ok else None
        if request.endpoint != "versions/commit" or not isinstance(data, dict):
            return response
        with self.lock:
            first = self.state.get("first", {}).get(str(body_of(request).get("upload")))
        files = [f for f in data.get("files") or [] if isinstance(f, dict)]
        if not first or all(f.get("name") in first for f in files):
            return response
        return response.with_json({**data, "files": [f for f in files
                                                     if f.get("name") in first]})


@mutant
class CommitReplyStreamedUnsized(StreamBook):
    """The commit answers streamed files as they were declared, without size or sha256
    (reads of the version give them)."""

    name = "ver-commit-reply-gives-streamed-files-no-size-or-sha256"
    clause = "VER-6.a"
    summary = "the commit's Version lists streamed files with size and sha256 null"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data: Any = response.json() if response.ok else None
        up = self.upload_of(request)
        if request.endpoint != "versions/commit" or not isinstance(data, dict) or up is None:
            return response
        free = {f.get("name") for f in up.write.get("files") or []
                if isinstance(f, dict) and "size" not in f}
        files = [{**f, "size": None, "sha256": None}
                 if isinstance(f, dict) and f.get("name") in free else f
                 for f in data.get("files") or []]
        return response.with_json({**data, "files": files}) if free else response
