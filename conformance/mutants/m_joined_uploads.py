"""Mutants of one upload with many writers (VER-5): a joining write that starts an upload of
its own, a refused write that still adds its new names, the wrong error for a committed,
foreign or other-version upload, and a fenced write that is let in."""

from __future__ import annotations

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.rows import On, Row, Turn, refused_when, rows, sent_upload, set_fields
from conformance.mutants.tracking import Tracked, body_of, key_of


def _joining(request: Request) -> bool:
    return request.endpoint == "versions/write" and isinstance(body_of(request).get("upload"),
                                                               str)


def _without_upload(request: Request) -> Request:
    body = dict(body_of(request))
    body.pop("upload", None)
    return request.with_json(body)


@mutant
class JoinedFilesLeftOutOfTheCommit(Tracked):
    """A joining write answers as it should, but only the first write's files are the
    upload's: the others' PUTs go nowhere and the commit leaves their files out."""

    name = "ver-commit-covers-the-first-write-only"
    clause = "VER-5.e"
    summary = "a joining write's files get URLs but are not part of the upload's version"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if not _joining(request):
            return None
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
        if up is None or up.artifact != body.get("artifact") \
                or up.write.get("version") != body.get("version"):
            return None
        # A write of the same files into a throwaway version gives real URLs that lead nowhere.
        decoy = {**body, "version": "step-99999999"}
        decoy.pop("upload", None)
        reply = upstream.send(request.with_json(decoy))
        data = reply.json() if reply.ok else None
        if not isinstance(data, dict):
            return None
        return reply.with_json({**data, "upload": up.upload})


@mutant
class CommittedUploadJoinConflicts(Tracked):
    """A write into an upload that was committed answers 409 version_exists (the version it
    made exists) instead of 404."""

    name = "ver-write-into-a-committed-upload-gets-409"
    clause = "VER-5.c"
    summary = "a write naming a committed upload gets 409 version_exists, not 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint == "versions/commit" and response.ok:
            with self.lock:
                self.state.setdefault("done", set()).add(body.get("upload"))
            return response
        if not _joining(request) or response.status != 404:
            return response
        with self.lock:
            done = body.get("upload") in self.state.get("done", set())
        if done:
            return Response.error(409, "version_exists", "the upload was committed")
        return response


@mutant
class FencedTokenJoinsOwnUpload(Tracked):
    """A write into its own upload with a token fenced since is accepted as long as the
    upload was started before the fencing open (checked only at commit)."""

    name = "ver-write-into-own-upload-with-a-fenced-token-accepted"
    clause = "VER-5.d"
    summary = "a fenced box's write into its own earlier upload succeeds instead of 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _joining(request) or error_code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
            newest = self.t.newest.get(str(body.get("artifact")))
        if up is None or up.token != body.get("token") or newest is None:
            return response
        decoy = {**body, "token": newest.token, "version": "step-99999998"}
        decoy.pop("upload", None)
        reply = upstream.send(request.with_json(decoy))
        data = reply.json() if reply.ok else None
        if not isinstance(data, dict) or key_of(request) is None:
            return response
        return reply.with_json({**data, "upload": up.upload})


@mutant
class JoinedFilesMustBeListed(Tracked):
    """The commit of an upload that several writes made needs its files list to name the
    joining writes' files (taken for streamed ones), else 409 incomplete."""

    name = "ver-commit-of-a-joined-upload-needs-the-joined-files-listed"
    clause = "VER-5.e"
    summary = "a commit without files of an upload two writes made gets 409 incomplete"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.endpoint != "versions/commit":
            return None
        body = body_of(request)
        with self.lock:
            joins = self.state.get("joins", {}).get(body.get("upload"), set())
        listed = {f.get("name") for f in body.get("files") or [] if isinstance(f, dict)}
        if joins and not joins <= listed:
            return Response.error(409, "incomplete", "the joined files are not listed")
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if _joining(request) and response.ok:
            body = body_of(request)
            with self.lock:
                self.state.setdefault("joins", {}).setdefault(body.get("upload"), set()).update(
                    f.get("name") for f in body.get("files") or [] if isinstance(f, dict))
        return response


@mutant
class RefusedCommitClosesTheUpload(Tracked):
    """After a commit of an upload is refused (409 incomplete), writes naming the upload
    get 404: the refused commit closed it to more writers."""

    name = "ver-upload-whose-commit-was-refused-takes-no-more-writes"
    clause = "VER-5.a"
    summary = "a write joining an upload whose commit was refused 409 incomplete gets 404"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if not _joining(request):
            return None
        with self.lock:
            closed = body_of(request).get("upload") in self.state.get("closed", set())
        return Response.error(404, "not_found", "no such open upload") if closed else None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/commit" and error_code(response) == "incomplete":
            with self.lock:
                self.state.setdefault("closed", set()).add(body_of(request).get("upload"))
        return response


def _new_names_added(reply: Response, turn: Turn) -> Response:
    """The refused write's names that are new to the upload (and not repeated) are written
    into it all the same; the client still gets the refusal."""
    sent, up = body_of(turn.request), sent_upload(turn)
    if up is None:
        return reply
    known = {f.get("name") for f in up.write.get("files") or []}
    files = [f for f in sent.get("files") or [] if isinstance(f, dict)]
    names = [f.get("name") for f in files]
    fresh = [f for f in files if f.get("name") not in known and names.count(f.get("name")) == 1]
    if fresh and len(fresh) < len(files):
        turn.upstream.send(turn.request.with_json({**sent, "files": fresh}))
    return reply


def _of_another_version(turn: Turn) -> bool:
    up = sent_upload(turn)
    return up is not None and up.write.get("version") != body_of(turn.request).get("version")


def _of_another_artifact(turn: Turn) -> bool:
    up = sent_upload(turn)
    return up is not None and up.artifact != body_of(turn.request).get("artifact")


def _taken_over_by_newest(reply: Response, turn: Turn) -> Response:
    sent = body_of(turn.request)
    with turn.lock:
        newest = turn.t.newest.get(str(sent.get("artifact")))
    if newest is None or newest.token != sent.get("token"):
        return reply
    return ok_or(turn.upstream, _without_upload(turn.request), reply)


def _repeats_a_file_of_the_upload(turn: Turn) -> bool:
    up = sent_upload(turn)
    known = {f.get("name") for f in (up.write.get("files") or [])} if up else set()
    return any(isinstance(f, dict) and f.get("name") in known
               for f in body_of(turn.request).get("files") or [])


def _joining_refused(replies: str | int, code: str | None = None) -> On:
    return On(WRITE, replies=replies, code=code, when=_joining)


WRITE = ("versions/write",)

rows(
    # A write naming an upload is taken as a new write: it answers its own upload, and the
    # commit of the first upload lacks the other ranks' files.
    Row("ver-write-naming-an-upload-starts-a-new-one", "VER-5.a",
        "a write with upload U starts an upload of its own instead of joining U",
        On(WRITE, replies="any", when=_joining), ask=_without_upload),
    # Only the write that starts an upload hands out PUT URLs.
    Row("ver-write-joining-an-upload-answers-no-urls", "VER-5.a",
        "a write naming an upload answers files: [] instead of its files' PUT URLs",
        On(WRITE, when=_joining), answer=set_fields(files=[])),
    # The upload then waits for files nobody uploads.
    Row("ver-write-refused-for-a-name-twice-still-adds-its-new-names", "VER-5.b",
        "a joining write refused for a repeated name adds its other names to the upload",
        _joining_refused("error", "invalid_argument"), answer=_new_names_added, tracked=True),
    Row("ver-write-declaring-a-file-of-the-upload-again-gets-409", "VER-5.b",
        "a joining write that repeats an earlier write's file name gets 409, not 400",
        _joining_refused("error", "invalid_argument"),
        answer=refused_when(_repeats_a_file_of_the_upload, 409, "version_exists",
                            "the upload has this file already"), tracked=True),
    Row("ver-write-into-an-upload-of-another-version-gets-404", "VER-5.c",
        "a write of step N into an upload of step M gets 404 not_found, not 400",
        _joining_refused("error", "invalid_argument"),
        answer=refused_when(_of_another_version, 404, "not_found",
                            "no such upload for this version"), tracked=True),
    Row("ver-write-into-another-artifacts-upload-gets-400", "VER-5.c",
        "a write naming another artifact's upload gets 400 invalid_argument, not 404",
        _joining_refused(404),
        answer=refused_when(_of_another_artifact, 400, "invalid_argument",
                            "the upload is of another artifact"), tracked=True),
    # The files join a fresh upload of the newest box (the upload changes hands).
    Row("ver-write-with-the-newest-token-into-an-older-epochs-upload-accepted", "VER-5.d",
        "the newest box's write into a fenced box's upload succeeds instead of 409",
        _joining_refused("error", "fenced"), answer=_taken_over_by_newest, tracked=True),
)
