"""Mutants of FORK-*: refused forks and what they leave behind, the fork's source (missing,
malformed, unreadable, spelled loosely), the resumed source version, ``forked_from``, and
a source that must stay untouched. One row each (rows.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.open_bends import SOURCE
from conformance.mutants.open_bends import as_writer_of_new
from conformance.mutants.open_bends import fork_source
from conformance.mutants.open_bends import noted_forks
from conformance.mutants.open_bends import refusal_names_holder
from conformance.mutants.open_bends import resumed
from conformance.mutants.open_bends import version_read
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
from conformance.mutants.tracking import open_latest
from conformance.mutants.tracking import versions_of
from conformance.mutants.tracking import with_key

__all__ = ["SOURCE"]

Json = dict[str, Any]
OPEN = ("artifacts/open",)


def _resume(request: Request) -> str | None:
    """The resume string of a fork open (anything else than latest or null)."""
    resume = body_of(request).get("resume")
    return resume if isinstance(resume, str) and resume != "latest" else None


def _forking(request: Request) -> bool:
    return _resume(request) is not None


def _well_formed(request: Request) -> bool:
    return SOURCE.match(_resume(request) or "") is not None


def _source(turn: Turn) -> str:
    """The source artifact of a well-formed fork."""
    return SOURCE.match(str(_resume(turn.request)))[1]  # type: ignore[index]


def _source_exists(turn: Turn) -> bool:
    return artifact_info(turn.upstream, key_of(turn.request), _source(turn)) is not None


def _as(resume: Callable[[Turn], str | None]) -> Callable[[Turn], Request | None]:
    """The open with the resume ``resume`` gives (None: left alone)."""

    def change(turn: Turn) -> Request | None:
        new = resume(turn)
        return None if new is None else turn.request.with_json(dict(body_of(turn.request),
                                                                    resume=new))

    return change


# --- FORK-1.a ---------------------------------------------------------------------------


def _target_reopened(reply: Response, turn: Turn) -> Response:
    art = str(artifact_of(turn.request))
    info = artifact_info(turn.upstream, key_of(turn.request), art)
    if info is not None and info.get("holder"):
        open_latest(turn.upstream, key_of(turn.request), art, str(info["holder"]))
    return reply


def _into_fork_allowed(reply: Response, turn: Turn) -> Response:
    """A fork refused not_empty into an artifact that is itself a fork, run as a latest
    open resumed from the source version."""
    forks = noted_forks(turn, reply)
    src = fork_source(turn.request)
    if not src or error_code(reply) != "not_empty" or artifact_of(turn.request) not in forks:
        return reply
    version = version_read(turn, *src)
    if not isinstance(version, dict):
        return reply
    again = turn.upstream.send(turn.request.with_json(dict(body_of(turn.request),
                                                           resume="latest")))
    return again.with_json(dict(again.json(), resume_from=version)) if again.ok else reply


def _into_own_source(request: Request) -> bool:
    resume = body_of(request).get("resume")
    return isinstance(resume, str) \
        and resume.rpartition("/")[0] == f"o41://{body_of(request).get('artifact')}"


# --- FORK-1.b / FORK-1.c ----------------------------------------------------------------


def _above_latest(turn: Turn) -> str | None:
    src = fork_source(turn.request)
    listed = versions_of(turn.upstream, key_of(turn.request), src[0]) if src else []
    if not src or not listed or listed[-1]["version"] >= src[1]:
        return None
    return f"o41://{src[0]}/{listed[-1]['version']}"


_SHORT_STEP = re.compile(r"^o41://([^/]+/[^/]+)/step-(\d{1,7})$")


def _padded(request: Request) -> Request:
    m = _SHORT_STEP.match(str(_resume(request)))
    assert m is not None
    return request.with_json(dict(body_of(request),
                                  resume=f"o41://{m[1]}/step-{int(m[2]):08d}"))


def _latest_of(pattern: str) -> Callable[[Turn], Request | None]:
    """A fork source matching ``pattern`` (group 1: the source) forks the source's latest."""
    spelled = re.compile(pattern)

    def before(turn: Turn) -> Request | None:
        m = spelled.match(str(_resume(turn.request)))
        listed = versions_of(turn.upstream, key_of(turn.request), m[1]) if m else []
        if not listed:
            return None
        return turn.request.with_json(dict(body_of(turn.request),
                                           resume=f"o41://{m[1]}/{listed[-1]['version']}"))

    return before


def _cleaned(request: Request) -> str:
    resume = str(_resume(request)).rstrip("/")
    return "o41://" + resume[6:] if resume[:6].lower() == "o41://" else resume


def _loosely_spelled(request: Request) -> bool:
    resume = _resume(request)
    return resume is not None and _cleaned(request) != resume \
        and SOURCE.match(_cleaned(request)) is not None


# --- FORK-1.d ---------------------------------------------------------------------------


def _as_source_owner(turn: Turn) -> Request | None:
    """A fork refused for its source, sent with the key that opened the source, when the
    key can read (hence is not refused on) the target."""
    key = key_of(turn.request)
    if _source_exists(turn):
        return None  # the source is readable: the target was the refusal
    with turn.lock:
        owner = turn.t.newest.get(_source(turn))
    if owner is None or not owner.key:
        return None
    probe = api_get(turn.upstream, "versions/list", key, artifact=str(artifact_of(turn.request)))
    return None if probe.status == 403 else with_key(turn.request, owner.key)


# --- FORK-2 -----------------------------------------------------------------------------


def _forked(request: Request) -> bool:
    return request.method == "POST" and _well_formed(request)


def _source_latest(reply: Response, turn: Turn) -> Response:
    opened = reply.json()
    if not isinstance(opened.get("resume_from"), dict):
        return reply
    latest = api_get(turn.upstream, "versions/read", key_of(turn.request),
                     artifact=_source(turn), urls="1")
    if latest.ok and latest.json().get("version") != opened["resume_from"].get("version"):
        return reply.with_json(dict(opened, resume_from=latest.json()))
    return reply


def _location_of_source_latest(version: Json, turn: Turn) -> Json | None:
    src = fork_source(turn.request)
    listed = versions_of(turn.upstream, key_of(turn.request), src[0]) if src else []
    if not src or not listed or listed[-1]["version"] == src[1]:
        return None
    return {**version, "location": listed[-1].get("location")}


def _named_after_fork(reply: Response, turn: Turn) -> Response:
    opened = reply.json()
    resume = opened.get("resume_from")
    if not isinstance(resume, dict) or resume.get("artifact") == opened.get("artifact"):
        return reply
    return reply.with_json(dict(opened, resume_from=dict(resume, artifact=opened.get("artifact"))))


def forked_from(change: Callable[[Json, Turn], Json | None]) -> Bend:
    """artifacts/read's ``forked_from`` (when an object) as ``change`` makes it (the
    same object: left as it was)."""

    def bend(reply: Response, turn: Turn) -> Response:
        state = reply.json()
        was = state.get("forked_from")
        if not isinstance(was, dict):
            return reply
        new = change(was, turn)
        return reply if new == was else reply.with_json(dict(state, forked_from=new))

    return bend


def _lost_after_relaunch(was: Json, turn: Turn) -> Json | None:
    reading = turn.request.arg("artifact") or ""
    with turn.lock:
        opens = len(turn.t.opens.get(reading, []))
    return None if opens >= 2 else was


def _names_source_latest(was: Json, turn: Turn) -> Json | None:
    info = artifact_info(turn.upstream, key_of(turn.request), str(was.get("artifact")))
    if info and info.get("latest") and info["latest"] != was.get("version"):
        return dict(was, version=info["latest"])
    return was


def _nulled_by_delete(reply: Response, turn: Turn) -> Response:
    """Deletes are noted; forked_from naming a deleted version reads null."""
    sent = body_of(turn.request)
    if turn.request.endpoint == "versions/delete":
        if reply.ok:
            with turn.lock:
                turn.memory.setdefault("gone", set()).add((str(sent.get("artifact")),
                                                           str(sent.get("version"))))
        return reply

    def gone(was: Json, turn: Turn) -> Json | None:
        with turn.lock:
            deleted = (str(was.get("artifact")), str(was.get("version"))) in \
                turn.memory.get("gone", set())
        return None if deleted else was

    return forked_from(gone)(reply, turn) if reply.ok and isinstance(reply.json(), dict) \
        else reply


def source_reopened(after: Callable[[Turn, str], bool]) -> Bend:
    """After a fork for which ``after`` holds (the turn, the source), the source is opened
    again for its own holder: its epoch rises and its writer is fenced."""

    def bend(reply: Response, turn: Turn) -> Response:
        if not isinstance(reply.json().get("resume_from"), dict):
            return reply
        source = _source(turn)
        if not after(turn, source):
            return reply
        with turn.lock:
            owner = turn.t.newest.get(source)
        if owner is not None:
            open_latest(turn.upstream, owner.key, source, owner.holder)
        return reply

    return bend


def _nth_fork(nth: int) -> Callable[[Turn, str], bool]:
    def after(turn: Turn, source: str) -> bool:
        with turn.lock:
            counts = turn.memory.setdefault("forks", {})
            counts[source] = counts.get(source, 0) + 1
            return counts[source] == nth

    return after


def _of_older_version(turn: Turn, source: str) -> bool:
    listed = versions_of(turn.upstream, key_of(turn.request), source)
    return bool(listed) and listed[-1]["version"] != SOURCE.match(
        str(_resume(turn.request)))[2]  # type: ignore[index]


def _source_uploads_closed(reply: Response, turn: Turn) -> Response:
    """Writes and forks are numbered as they succeed; a commit of an upload started before
    its artifact was forked from answers 409 fenced."""
    sent = body_of(turn.request)
    endpoint = turn.request.endpoint
    if endpoint == "versions/write" and reply.ok:
        into, name = "started", str((reply.json() or {}).get("upload"))
    elif endpoint == "artifacts/open" and reply.ok and _well_formed(turn.request):
        into, name = "forked", str(sent["resume"]).removeprefix("o41://").rsplit("/", 1)[0]
    else:
        return reply
    with turn.lock:
        n = turn.memory["n"] = turn.memory.get("n", 0) + 1
        turn.memory.setdefault(into, {})[name] = n
    return reply


def _commit_after_fork(turn: Turn) -> Response | None:
    if turn.request.endpoint != "versions/commit":
        return None
    sent = body_of(turn.request)
    with turn.lock:
        started = turn.memory.get("started", {}).get(str(sent.get("upload")))
        forked = turn.memory.get("forked", {}).get(str(sent.get("artifact")))
    if started is not None and forked is not None and started < forked:
        return Response.error(409, "fenced", "the artifact was forked since this upload")
    return None


NOT_EMPTY = On(OPEN, replies="error", code="not_empty", when=_forking)
NOT_FOUND = On(OPEN, replies="error", code="not_found", when=_well_formed)
REFUSED = On(OPEN, replies=403, when=_well_formed)
FORKED = On(OPEN, when=_forked)
READ = On(("artifacts/read",))

rows(
    Row("fork_into_nonempty_has_checkpoints_code", "FORK-1.a",
        "a fork into an artifact with versions is 409 has_checkpoints, not not_empty",
        NOT_EMPTY, answer=error(409, "has_checkpoints", "the artifact has checkpoints"),
        tracked=True),
    Row("fork_into_nonempty_reopens_target", "FORK-1.a",
        "a refused fork re-opens the target for its own holder (its epoch rises)",
        NOT_EMPTY, answer=_target_reopened, tracked=True),
    Row("fork_into_forked_artifact_with_versions_allowed", "FORK-1.a",
        "a fork into a forked artifact that has versions succeeds",
        On(OPEN, replies="any"), answer=_into_fork_allowed, tracked=True),
    Row("fork-not-empty-refusal-records-the-forks-holder", "FORK-1.a",
        "a fork refused 409 not_empty leaves artifacts/read naming the fork's holder",
        On((*OPEN, "artifacts/read"), replies="any"), answer=refusal_names_holder("not_empty"),
        tracked=True),
    Row("fork-into-its-own-source-resumes-instead-of-409", "FORK-1.a",
        "a fork of o41://A/step-N opened on A itself succeeds as a resume of A",
        On(OPEN, replies="error", code="not_empty", when=_into_own_source),
        answer=retried(_as(lambda turn: "latest")), tracked=True),
    Row("fork_missing_version_400", "FORK-1.b",
        "a fork from an existing artifact's missing version is 400 instead of 404",
        NOT_FOUND, answer=refused_when(_source_exists, 400, "invalid_argument",
                                       "no such version"), tracked=True),
    Row("fork_missing_source_artifact_starts_empty", "FORK-1.b",
        "a fork from an artifact that does not exist opens the target empty instead of 404",
        NOT_FOUND, answer=retried(_as(lambda turn: None if _source_exists(turn) else "latest")),
        tracked=True),
    Row("fork_from_step_above_latest_forks_latest", "FORK-1.b",
        "a fork from a step past the source's latest forks that latest instead of 404",
        On(OPEN, replies=404, when=_forked), answer=retried(_as(_above_latest)), tracked=True),
    Row("fork_short_step_padded", "FORK-1.c",
        "a fork source with fewer than 8 step digits is padded and accepted",
        On(OPEN, when=lambda r: _SHORT_STEP.match(str(_resume(r))) is not None), ask=_padded,
        tracked=True),
    Row("fork_source_without_version_forks_latest", "FORK-1.c",
        "a fork source o41://P/N without a version forks the source's latest",
        On(OPEN, when=_forking), serve=_latest_of(r"^o41://([^/]+/[^/]+)/?$"), tracked=True),
    Row("fork_source_trailing_slash_or_upper_scheme_accepted", "FORK-1.c",
        "a fork source 'o41://P/N/step-X/' or 'O41://P/N/step-X' is accepted",
        On(OPEN, when=lambda r: r.method == "POST" and _loosely_spelled(r)),
        ask=lambda r: r.with_json(dict(body_of(r), resume=_cleaned(r))), tracked=True),
    Row("fork-source-with-version-latest-accepted", "FORK-1.c",
        "a fork from 'o41://P/N/latest' forks the source's latest instead of 400",
        On(OPEN, when=lambda r: r.method == "POST"),
        serve=_latest_of(r"^o41://(.*)/latest$"), tracked=True),
    Row("fork_source_read_not_checked", "FORK-1.d",
        "a fork by a key that cannot read the source succeeds if it can write the target",
        REFUSED, answer=retried(_as_source_owner), tracked=True),
    Row("fork_unreadable_source_404", "FORK-1.d",
        "a fork from a source the key cannot read is 404 not_found instead of 403",
        REFUSED, answer=refused_when(lambda turn: not _source_exists(turn), 404, "not_found",
                                     "no such fork source"), tracked=True),
    Row("fork_target_write_not_checked_for_new_artifact", "FORK-1.d",
        "a read-only key forks into a new artifact it cannot write",
        On(OPEN, replies=403, when=_forked), answer=retried(as_writer_of_new), tracked=True),
    Row("fork_resume_from_is_source_latest", "FORK-2.a",
        "a fork from an older version resumes from the source's latest instead",
        FORKED, answer=_source_latest, tracked=True),
    Row("fork_resume_from_without_urls", "FORK-2.a",
        "a fork's resume_from lists its files without URLs",
        FORKED, answer=resumed(lambda version, turn: {**version, "files": [
            {k: v for k, v in f.items() if k != "url"} for f in version.get("files") or []]}),
        tracked=True),
    Row("fork_resume_from_location_of_source_latest", "FORK-2.a",
        "a fork of an older version reports the location of the source's latest",
        FORKED, answer=resumed(_location_of_source_latest), tracked=True),
    Row("fork-resume-from-artifact-names-the-fork", "FORK-2.a",
        "a fork's resume_from.artifact is the fork's name instead of the source's",
        On(OPEN), answer=_named_after_fork, tracked=True),
    Row("fork_forked_from_lost_after_relaunch", "FORK-2.b",
        "artifacts/read shows forked_from null once the fork was opened again",
        READ, answer=forked_from(_lost_after_relaunch), tracked=True),
    Row("fork_forked_from_names_source_latest", "FORK-2.b",
        "forked_from names the source's current latest version, not the forked one",
        READ, answer=forked_from(_names_source_latest), tracked=True),
    Row("fork_forked_from_artifact_lower_cased", "FORK-2.b",
        "forked_from names the source in lower case (wrong for names with capitals)",
        READ, answer=forked_from(lambda was, turn: dict(was,
                                                        artifact=str(was.get("artifact")).lower())),
        tracked=True),
    Row("fork-forked-from-null-once-the-source-version-is-deleted", "FORK-2.b",
        "artifacts/read answers forked_from null after the source version's delete",
        On(("artifacts/read", "versions/delete"), replies="any"), answer=_nulled_by_delete,
        tracked=True),
    Row("fork_fences_source_holder", "FORK-2.c",
        "a fork re-opens its source for the source's holder, fencing its running writer",
        FORKED, answer=source_reopened(_nth_fork(1)), tracked=True),
    Row("fork_second_fork_fences_source", "FORK-2.c",
        "the second fork from one source fences the source's writer",
        FORKED, answer=source_reopened(_nth_fork(2)), tracked=True),
    Row("fork_of_older_version_fences_source", "FORK-2.c",
        "a fork of a non-latest version raises the source's epoch, fencing its writer",
        FORKED, answer=source_reopened(_of_older_version), tracked=True),
    Row("fork-fences-the-sources-upload-in-flight", "FORK-2.c",
        "the source's upload started before a fork can no longer be committed (409)",
        On(("versions/write", "versions/commit", *OPEN), replies="any"),
        serve=_commit_after_fork, answer=_source_uploads_closed, tracked=True),
)
