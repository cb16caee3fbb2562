"""Mutants of which error wins when a request is wrong in several ways: VER-6.f (the fence,
the step's conflict, the upload or the version checked before what makes the request
malformed) and the key
first (AUTH-1, AUTH-2.c, AUTH-3: 401 or 403 before a 400, 404 or 409), and the open's body
checked after the artifact's state (API-1.f). One row each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.base import api_request
from conformance.mutants.m_retention import step_of
from conformance.mutants.open_bends import SOURCE
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import error
from conformance.mutants.rows import refused_when
from conformance.mutants.rows import retried
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import artifact_info
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of
from conformance.mutants.tracking import with_key

READS = ("versions/read", "versions/list", "artifacts/read")
OPEN, WRITE, COMMIT, DELETE = ("artifacts/open",), ("versions/write",), ("versions/commit",), \
    ("versions/delete",)


# --- VER-6.f: the fence, the upload, the version before the body -------------------------


def _fenced(turn: Turn) -> bool:
    """The request's token is of an older open of its artifact than the newest."""
    body = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(body.get("token")))
        newest = turn.t.newest.get(str(body.get("artifact")))
    return info is not None and newest is not None and info.artifact == newest.artifact \
        and info.epoch < newest.epoch


FENCED_FIRST = refused_when(_fenced, 409, "fenced", "the token is of an older epoch")


def _incomplete_upload(turn: Turn) -> bool:
    with turn.lock:
        up = turn.t.uploads.get(str(body_of(turn.request).get("upload")))
    return up is not None and not up.complete and isinstance(body_of(turn.request).get("files"),
                                                             list)


def _unknown_upload(turn: Turn) -> bool:
    with turn.lock:
        return body_of(turn.request).get("upload") not in turn.t.uploads


def _committed_upload(turn: Turn) -> bool:
    with turn.lock:
        return body_of(turn.request).get("upload") in turn.t.closed


def _names_upload(request: Request) -> bool:
    return isinstance(body_of(request).get("upload"), str)


def unknown_to_the_key(turn: Turn, artifact: object) -> bool:
    """Whether artifacts/read of ``artifact``, with the request's own Authorization, is 404."""
    auth = turn.request.header("Authorization")
    got = turn.upstream.send(api_request("GET", "artifacts/read", auth,
                                         (("artifact", str(artifact)),)))
    return got.status == 404


def _foreign_token_for_unknown_artifact(turn: Turn) -> bool:
    sent = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(sent.get("token")))
    return info is not None and info.artifact != sent.get("artifact") \
        and unknown_to_the_key(turn, sent.get("artifact"))


# --- the key first ----------------------------------------------------------------------


def good_key_of(applies: Callable[[Turn], bool] | None = None) -> Callable[[Turn], Request | None]:
    """The request with a key that opened its artifact (or anything) before, unless it has
    that key already or ``applies`` says no."""

    def change(turn: Turn) -> Request | None:
        if applies is not None and not applies(turn):
            return None
        with turn.lock:
            key = turn.t.good_key(artifact_of(turn.request))
        return None if key is None or key == key_of(turn.request) else with_key(turn.request, key)

    return change


def answered_with(*statuses: int) -> Callable[[Response], bool]:
    return lambda again: again.status in statuses


def _unknown_token(turn: Turn) -> bool:
    with turn.lock:
        return not any(i.token == body_of(turn.request).get("token")
                       for i in turn.t.tokens.values())


def _missing_artifact(turn: Turn) -> bool:
    """A key that opened something finds no artifact the request names."""
    with turn.lock:
        key = turn.t.good_key()
    art = body_of(turn.request).get("artifact")
    return key is not None and key != key_of(turn.request) \
        and not (isinstance(art, str) and artifact_info(turn.upstream, key, art) is not None)


Instead = Callable[[Upstream, str, dict[str, Any]], Response | None]


def other_fault_first(instead: Instead) -> Bend:
    """An open refused 403 answered with what else is wrong with it, as a key that worked
    sees it (``instead``: the upstream, that key and the body; None: the 403 kept)."""

    def bend(reply: Response, turn: Turn) -> Response:
        body = body_of(turn.request)
        with turn.lock:
            key = turn.t.good_key(body.get("artifact"))
        if key is None or not isinstance(body.get("artifact"), str):
            return reply
        return instead(turn.upstream, key, body) or reply

    return bend


def source_of(resume: Any) -> tuple[str, str] | None:
    """(artifact, version) of a fork source spelled ``o41://artifact/version``."""
    if not isinstance(resume, str) or not resume.startswith("o41://"):
        return None
    artifact, _, version = resume[len("o41://"):].rpartition("/")
    return (artifact, version) if artifact else None


def _not_empty_target(upstream: Upstream, key: str, body: dict[str, Any]) -> Response | None:
    if source_of(body.get("resume")) and versions_of(upstream, key, body["artifact"]):
        return Response.error(409, "not_empty", "the fork target already has versions")
    return None


def _missing_source(upstream: Upstream, key: str, body: dict[str, Any]) -> Response | None:
    src = source_of(body.get("resume"))
    if src and api_get(upstream, "versions/read", key, artifact=src[0],
                       version=src[1]).status == 404:
        return Response.error(404, "not_found", f"no version {src[1]} in {src[0]}")
    return None


def _checkpoints(upstream: Upstream, key: str, body: dict[str, Any]) -> Response | None:
    if body.get("resume") is None and versions_of(upstream, key, body["artifact"]):
        return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
    return None


# --- the body after the artifact's state (API-1.f) -------------------------------------


def _body_fault_only(request: Request) -> bool:
    """An open whose artifact and resume are well formed (so a 400 came from another field)."""
    body = body_of(request)
    resume = body.get("resume")
    ok_resume = resume is None or resume == "latest" \
        or (isinstance(resume, str) and SOURCE.match(resume) is not None)
    return request.method == "POST" and isinstance(body.get("artifact"), str) \
        and "resume" in body and ok_resume


def _fork(request: Request) -> bool:
    resume = body_of(request).get("resume")
    return request.method == "POST" and isinstance(resume, str) and bool(SOURCE.match(resume))


def _target_has_versions(turn: Turn) -> bool:
    return bool(versions_of(turn.upstream, key_of(turn.request),
                            str(artifact_of(turn.request))))


def _source_missing(turn: Turn) -> bool:
    match = SOURCE.match(str(body_of(turn.request).get("resume")))
    return match is not None and api_get(turn.upstream, "versions/read", key_of(turn.request),
                                         artifact=match[1], version=match[2]).status == 404


def _bad_place_or_holder(request: Request) -> bool:
    body = body_of(request)
    place, holder = body.get("place"), body.get("holder", "")
    bad_place = place is not None and not (
        isinstance(place, dict) and isinstance(place.get("cloud"), str)
        and isinstance(place.get("region"), str))
    return request.method == "POST" and (bad_place or not isinstance(holder, str))


# --- VER-6.f: the step's conflict, the unknown upload or version before the body ---------


def _holds_newest(turn: Turn) -> bool:
    """The request's token is the newest of its artifact (so the token is no error)."""
    body = body_of(turn.request)
    with turn.lock:
        newest = turn.t.newest.get(str(body.get("artifact")))
    return newest is not None and newest.token == body.get("token")


def _step_conflict(reply: Response, turn: Turn) -> Response:
    """The 409 a write of this version would get for its step (the reply if none)."""
    if not _holds_newest(turn):
        return reply
    body = body_of(turn.request)
    step = step_of(body.get("version"))
    listed = versions_of(turn.upstream, key_of(turn.request), str(body.get("artifact")))
    if step is None or not listed:
        return reply
    if any(r.get("version") == body.get("version") for r in listed):
        return Response.error(409, "version_exists", "the version is committed")
    if step <= max(step_of(r.get("version")) or 0 for r in listed):
        return Response.error(409, "not_after_latest", "the step is not after the latest")
    return reply


def _unknown_upload_first(reply: Response, turn: Turn) -> Response:
    if not _holds_newest(turn):
        return reply
    with turn.lock:
        known = str(body_of(turn.request).get("upload")) in turn.t.uploads
    return reply if known else Response.error(404, "not_found", "no such upload")


def _unknown_version_first(reply: Response, turn: Turn) -> Response:
    body = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(body.get("token")))
    if info is not None and info.artifact == body.get("artifact"):
        return reply
    listed = versions_of(turn.upstream, key_of(turn.request), str(body.get("artifact")))
    if any(r.get("version") == body.get("version") for r in listed):
        return reply
    return Response.error(404, "not_found", "no such version")


def _names_an_upload(request: Request) -> bool:
    return body_of(request).get("upload") is not None


rows(
    Row("ver-write-malformed-with-a-fenced-token-gets-409", "VER-6.f",
        "a malformed write with a fenced token gets 409 fenced before its 400",
        On(WRITE, replies=400), answer=FENCED_FIRST, tracked=True),
    Row("ver-write-into-an-unknown-upload-with-a-fenced-token-gets-409", "VER-6.f",
        "a write naming an unknown upload with a fenced token gets 409 before its 404",
        On(WRITE, replies=404), answer=FENCED_FIRST, tracked=True),
    Row("ver-commit-of-an-unknown-upload-with-a-fenced-token-gets-409", "VER-6.f",
        "a commit of an unknown upload with a fenced token gets 409 before its 404",
        On(COMMIT, replies=404), answer=FENCED_FIRST, tracked=True),
    Row("ver-delete-of-an-unknown-version-with-a-fenced-token-gets-409", "VER-6.f",
        "a delete of an unknown version with a fenced token gets 409 before its 404",
        On(DELETE, replies=404), answer=FENCED_FIRST, tracked=True),
    Row("ver-delete-of-a-malformed-version-with-a-fenced-token-gets-409", "VER-6.f",
        "a delete of a malformed version with a fenced token gets 409 before its 400",
        On(DELETE, replies=400), answer=FENCED_FIRST, tracked=True),
    Row("ver-commit-with-a-bad-list-of-an-incomplete-upload-gets-409", "VER-6.f",
        "a commit listing a foreign name, of an upload lacking a file, gets 409 first",
        On(COMMIT, replies=400),
        answer=refused_when(_incomplete_upload, 409, "incomplete",
                            "a file of the upload is missing"), tracked=True),
    Row("ver-write-malformed-into-an-unknown-upload-gets-404", "VER-6.f",
        "a malformed write naming an unknown upload gets 404 not_found before its 400",
        On(WRITE, replies=400, when=_names_upload),
        answer=refused_when(_unknown_upload, 404, "not_found", "no such upload"), tracked=True),
    Row("ver-write-wrong-into-a-committed-upload-gets-404", "VER-6.f",
        "a write naming another version or a name twice, into a committed upload, gets 404",
        On(WRITE, replies=400, when=_names_upload),
        answer=refused_when(_committed_upload, 404, "not_found", "the upload is committed"),
        tracked=True),
    Row("ver-write-commit-or-delete-of-an-unknown-artifact-with-a-foreign-token-gets-404",
        "VER-6.f", "a write, commit or delete naming a missing artifact gets 404 before its 400",
        On((*WRITE, *COMMIT, *DELETE), replies="error", code="invalid_argument"),
        answer=refused_when(_foreign_token_for_unknown_artifact, 404, "not_found",
                            "no such artifact"), tracked=True),
    Row("ver-write-malformed-of-an-old-step-gets-409", "VER-6.f",
        "a write wrong in its files for a committed or older step gets 409 before 400",
        On(WRITE, replies="error", code="invalid_argument",
           when=lambda r: not _names_an_upload(r)), answer=_step_conflict, tracked=True),
    Row("ver-write-into-an-unknown-upload-of-an-old-step-gets-409", "VER-6.f",
        "a write of an old step naming an unknown upload gets 409 before 404",
        On(WRITE, replies=404, when=_names_an_upload), answer=_step_conflict, tracked=True),
    Row("ver-commit-of-an-unknown-upload-with-a-bad-list-gets-404", "VER-6.f",
        "a commit of an unknown upload with a malformed files list gets 404 before 400",
        On(COMMIT, replies="error", code="invalid_argument"), answer=_unknown_upload_first,
        tracked=True),
    Row("ver-delete-of-an-unknown-version-with-a-bad-token-gets-404", "VER-6.f",
        "a delete of an unknown version with a bad token gets 404 before 400",
        On(("versions/delete",), replies="error", code="invalid_argument",
           when=lambda r: step_of(body_of(r).get("version")) is not None),
        answer=_unknown_version_first, tracked=True),
    Row("auth-unknown-key-with-malformed-request-gets-400", "AUTH-1.b",
        "a malformed request with a well-formed unknown key answers 400, not 401",
        On(("artifacts/open", "versions/write", "versions/read", "versions/list"), replies=401,
           when=lambda r: key_of(r) is not None),
        answer=retried(good_key_of(), answered_with(400)), tracked=True),
    Row("auth-no-key-read-of-unknown-artifact-gets-404", "AUTH-1.a",
        "a read with no Authorization header of an unknown artifact or version answers 404",
        On(READS, replies=401, when=lambda r: r.header("Authorization") is None),
        answer=retried(good_key_of(), answered_with(404)), tracked=True),
    Row("auth-scope-of-unknown-artifact-outside-prefixes-gets-404", "AUTH-3.b",
        "reads of an artifact outside the key's prefixes that does not exist answer 404",
        On((*READS, "usage/read"), replies=403, when=lambda r: bool(artifact_of(r))),
        answer=retried(good_key_of(), answered_with(404)), tracked=True),
    Row("auth-read-key-write-with-unknown-token-gets-400", "AUTH-3.a",
        "a write by a read-only key with an unknown token answers 400, not 403",
        On(WRITE, replies=403), answer=retried(good_key_of(_unknown_token), answered_with(400)),
        tracked=True),
    Row("auth-read-key-commit-of-unknown-upload-gets-404", "AUTH-3.a",
        "a commit by a read-only key of an unknown upload answers 404, not 403",
        On(COMMIT, replies=403), answer=retried(good_key_of(_unknown_upload), answered_with(404)),
        tracked=True),
    Row("auth-read-key-open-latest-of-missing-artifact-gets-404", "AUTH-2.c",
        "an open by a key that cannot write a missing artifact answers 404, not 403",
        On(OPEN, replies=403, when=lambda r: body_of(r).get("resume") == "latest"),
        answer=refused_when(_missing_artifact, 404, "not_found", "no such artifact"),
        tracked=True),
    Row("auth-fork-into-nonempty-by-unwriting-key-gets-not-empty", "AUTH-2.c",
        "a fork by a key that cannot write a target with versions answers 409 not_empty",
        On(OPEN, replies=403), answer=other_fault_first(_not_empty_target), tracked=True),
    Row("auth-fork-from-missing-source-by-unwriting-key-gets-404", "AUTH-2.c",
        "a fork by a key that cannot write the target answers 404 when the source is missing",
        On(OPEN, replies=403), answer=other_fault_first(_missing_source), tracked=True),
    Row("auth-fresh-open-by-unwriting-key-gets-has-checkpoints", "AUTH-2.c",
        "a fresh open by a key that cannot write answers 409 has_checkpoints if versions",
        On(OPEN, replies=403), answer=other_fault_first(_checkpoints), tracked=True),
    Row("auth-open-by-unwriting-key-with-bad-place-or-holder-gets-400", "AUTH-2.c",
        "an open by a key without write, with a malformed place/holder, answers 400",
        On(OPEN, replies=403, when=_bad_place_or_holder),
        answer=error(400, "invalid_argument", "place needs 'cloud' and 'region'"),
        tracked=True),
    Row("open-fresh-with-bad-place-or-holder-on-checkpoints-gets-409", "API-1.f",
        "a fresh open with a malformed place/holder answers 409 if the artifact has versions",
        On(OPEN, replies=400,
           when=lambda r: _body_fault_only(r) and body_of(r).get("resume") is None),
        answer=refused_when(_target_has_versions, 409, "has_checkpoints",
                            "the artifact has checkpoints"), tracked=True),
    Row("fork-with-bad-place-or-holder-from-missing-source-gets-404", "API-1.f",
        "a fork with a malformed place/holder answers 404 when its source is missing",
        On(OPEN, replies=400, when=lambda r: _body_fault_only(r) and _fork(r)),
        answer=refused_when(_source_missing, 404, "not_found", "no such fork source"),
        tracked=True),
    Row("fork-from-missing-source-into-nonempty-gets-not-empty", "FORK-1.b",
        "a fork from a missing source into an artifact with versions answers 409",
        On(OPEN, replies=404, when=_fork),
        answer=refused_when(_target_has_versions, 409, "not_empty",
                            "the fork's target has versions"), tracked=True),
)
