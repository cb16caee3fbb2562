"""Mutants of one upload with many writers (VER-5): a joining write that starts an upload of
its own, a refused write that still adds its new names, the wrong error for a committed,
foreign or other-version upload, a fenced write that is let in, and a commit that leaves
the joined files out or needs them listed; one row each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.base import ok_or
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import noted
from conformance.mutants.rows import recalled
from conformance.mutants.rows import refused_when
from conformance.mutants.rows import rows
from conformance.mutants.rows import sent_upload
from conformance.mutants.rows import set_fields
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of


def _joining(request: Request) -> bool:
    return request.endpoint == "versions/write" and isinstance(body_of(request).get("upload"),
                                                               str)


def _without_upload(request: Request) -> Request:
    body = dict(body_of(request))
    body.pop("upload", None)
    return request.with_json(body)


def _decoy_join(turn: Turn, token: Any, version: str) -> Response | None:
    """The joining write's files written into a throwaway version (real URLs that lead
    nowhere), answered as if they had joined the upload named; None if not written."""
    body = body_of(turn.request)
    decoy = {**body, "token": token, "version": version}
    decoy.pop("upload", None)
    reply = turn.upstream.send(turn.request.with_json(decoy))
    data = reply.json() if reply.ok else None
    if not isinstance(data, dict):
        return None
    return reply.with_json({**data, "upload": body.get("upload")})


def _first_write_only(turn: Turn) -> Response | None:
    """Only the first write's files are the upload's: the others' PUTs go nowhere."""
    body, up = body_of(turn.request), sent_upload(turn)
    if up is None or up.artifact != body.get("artifact") \
            or up.write.get("version") != body.get("version"):
        return None
    return _decoy_join(turn, body.get("token"), "step-99999999")


def _fenced_join_taken(reply: Response, turn: Turn) -> Response:
    """The fence is checked only at commit for an upload started before it."""
    body, up = body_of(turn.request), sent_upload(turn)
    with turn.lock:
        newest = turn.t.newest.get(str(body.get("artifact")))
    if up is None or up.token != body.get("token") or newest is None \
            or key_of(turn.request) is None:
        return reply
    return _decoy_join(turn, newest.token, "step-99999998") or reply


def _upload_when(endpoint: str, test: Callable[[Response], bool]) -> Callable[
        [Response, Turn], set[Any]]:
    """The upload a request to ``endpoint`` names, when ``test`` holds for its reply."""
    return lambda reply, turn: {body_of(turn.request).get("upload")} \
        if turn.request.endpoint == endpoint and test(reply) else set()


def _upload_in(key: str, turn: Turn) -> bool:
    return recalled(key, body_of(turn.request).get("upload"), turn)


def _joins_unlisted(turn: Turn) -> Response | None:
    if turn.request.endpoint != "versions/commit":
        return None
    body = body_of(turn.request)
    with turn.lock:
        joins = turn.memory.get("joins", {}).get(body.get("upload"), set())
    listed = {f.get("name") for f in body.get("files") or [] if isinstance(f, dict)}
    if joins and not joins <= listed:
        return Response.error(409, "incomplete", "the joined files are not listed")
    return None


def _joins_noted(reply: Response, turn: Turn) -> Response:
    if _joining(turn.request) and reply.ok:
        body = body_of(turn.request)
        with turn.lock:
            turn.memory.setdefault("joins", {}).setdefault(body.get("upload"), set()).update(
                f.get("name") for f in body.get("files") or [] if isinstance(f, dict))
    return reply


def _committed_join(reply: Response, turn: Turn) -> Response:
    if turn.request.endpoint == "versions/commit":
        return noted("done", _upload_when("versions/commit", lambda r: r.ok))(reply, turn)
    if _joining(turn.request) and reply.status == 404 and _upload_in("done", turn):
        return Response.error(409, "version_exists", "the upload was committed")
    return reply


def _closed(turn: Turn) -> Response | None:
    if _joining(turn.request) and _upload_in("closed", turn):
        return Response.error(404, "not_found", "no such open upload")
    return None


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


WRITE, COMMIT = ("versions/write",), ("versions/commit",)


def _joining_refused(replies: str | int, code: str | None = None) -> On:
    return On(WRITE, replies=replies, code=code, when=_joining)


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
    Row("ver-commit-covers-the-first-write-only", "VER-5.e",
        "a joining write's files get URLs but are not part of the upload's version",
        On(WRITE, replies="any", when=_joining), serve=_first_write_only, tracked=True),
    Row("ver-write-into-a-committed-upload-gets-409", "VER-5.c",
        "a write naming a committed upload gets 409 version_exists, not 404",
        On(WRITE + COMMIT, replies="any"), answer=_committed_join),
    Row("ver-write-into-own-upload-with-a-fenced-token-accepted", "VER-5.d",
        "a fenced box's write into its own earlier upload succeeds instead of 409",
        _joining_refused("error", "fenced"), answer=_fenced_join_taken, tracked=True),
    Row("ver-commit-of-a-joined-upload-needs-the-joined-files-listed", "VER-5.e",
        "a commit without files of an upload two writes made gets 409 incomplete",
        On(WRITE + COMMIT, replies="any"), serve=_joins_unlisted, answer=_joins_noted),
    # The refused commit closed the upload to more writers.
    Row("ver-upload-whose-commit-was-refused-takes-no-more-writes", "VER-5.a",
        "a write joining an upload whose commit was refused 409 incomplete gets 404",
        On(WRITE + COMMIT, replies="any"), serve=_closed,
        answer=noted("closed", _upload_when("versions/commit",
                                            lambda r: error_code(r) == "incomplete"))),
)
