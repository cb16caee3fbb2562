"""Mutants of retention (VER-7): a deleted version still read, listed, counted or placed,
its step taken for an existing version, its URLs revoked at once or its bytes reclaimed
early, a deleted name hidden in every artifact, latest read wrong after a delete, and
deletes the contract refuses (the latest, a fenced or foreign or unknown token, a read
key, a second delete, a staged or malformed version, no version) let through or answered
with the wrong error. One row each (rows.py); what a row saw before a delete (the version
read, the usage, the URLs given out) it keeps in its memory."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import dropped
from conformance.mutants.rows import refused_when
from conformance.mutants.rows import retried
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of
from conformance.mutants.tracking import with_key

__all__ = ["claimed_step_refused", "step_of"]

Json = dict[str, Any]
DELETE = ("versions/delete",)
_STEP = re.compile(r"step-(\d{8})")


def step_of(version: Any) -> int | None:
    """The step of a well-formed version name, else None."""
    m = _STEP.fullmatch(version) if isinstance(version, str) else None
    return int(m[1]) if m else None


def _deleting(request: Request) -> bool:
    return request.endpoint == "versions/delete" and request.method == "POST"


def deleted(sent: Json) -> Response:
    """A delete's answer, as if ``sent`` was deleted now."""
    when = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    reply = {"artifact": sent.get("artifact"), "version": sent.get("version"),
             "deleted_at": when}
    return Response(200, (("Content-Type", "application/json"),)).with_json(reply)


def _answered_deleted(reply: Response, turn: Turn) -> Response:
    return deleted(body_of(turn.request))


# --- what a row saw before a delete ------------------------------------------------------

Before = Callable[[Turn], Response | None]


def _read_before_delete(turn: Turn) -> None:
    """The version a delete names, as versions/read answered it just before."""
    sent = body_of(turn.request)
    got = api_get(turn.upstream, "versions/read", key_of(turn.request),
                  artifact=str(sent.get("artifact")), version=str(sent.get("version")))
    with turn.lock:
        turn.memory.setdefault("read", {})[(sent.get("artifact"), sent.get("version"))] = got


def watching_deletes(first: Before | None = None) -> Before:
    """A row's look before a request: ``first`` (it may answer), then, for a delete, the
    version read back as it was (see :func:`gone`)."""

    def before(turn: Turn) -> Response | None:
        early = first(turn) if first else None
        if early is None and _deleting(turn.request):
            _read_before_delete(turn)
        return early

    return before


def after_deletes(later: Bend) -> Bend:
    """A delete that succeeded keeps what was read before it; then ``later``."""

    def bend(reply: Response, turn: Turn) -> Response:
        if _deleting(turn.request) and reply.ok:
            sent = body_of(turn.request)
            key = (sent.get("artifact"), sent.get("version"))
            with turn.lock:
                turn.memory.setdefault("gone", {})[key] = turn.memory.get("read", {}).get(key)
        return later(reply, turn)

    return bend


def gone(turn: Turn, artifact: object) -> dict[str, Response]:
    """The versions of ``artifact`` deleted so far, each as it read before its delete."""
    with turn.lock:
        return {v: r for (a, v), r in turn.memory.get("gone", {}).items()
                if a == artifact and r is not None}


def _ok_json(reply: Response, endpoint: str, turn: Turn) -> Json | None:
    state = reply.json() if reply.ok else None
    return state if turn.request.endpoint == endpoint and isinstance(state, dict) else None


def _still_listed(reply: Response, turn: Turn) -> Response:
    state = _ok_json(reply, "versions/list", turn)
    if state is None:
        return reply
    old = gone(turn, turn.request.arg("artifact"))
    listed = list(state.get("versions") or [])
    for before in old.values():
        row = before.json()
        if isinstance(row, dict):
            listed.append({k: v for k, v in row.items() if k not in ("files",)})
    listed.sort(key=lambda r: str(r.get("version")))
    return reply.with_json({**state, "versions": listed}) if old else reply


def _still_read(reply: Response, turn: Turn) -> Response:
    if turn.request.endpoint != "versions/read" or reply.status != 404:
        return reply
    return gone(turn, turn.request.arg("artifact")).get(str(turn.request.arg("version")), reply)


def _still_counted(reply: Response, turn: Turn) -> Response:
    state = _ok_json(reply, "artifacts/read", turn)
    if state is None or not isinstance(state.get("versions"), int):
        return reply
    old = gone(turn, turn.request.arg("artifact"))
    return reply.with_json({**state, "versions": state["versions"] + len(old)}) if old else reply


def _placements_before_delete(turn: Turn) -> None:
    if _deleting(turn.request):
        artifact = str(body_of(turn.request).get("artifact"))
        got = api_get(turn.upstream, "usage/read", key_of(turn.request), artifact=artifact)
        data = got.json() if got.ok else None
        if isinstance(data, dict):
            with turn.lock:
                turn.memory.setdefault("placed", {}).setdefault(artifact, data.get("placements"))


def _still_placed(reply: Response, turn: Turn) -> Response:
    state = _ok_json(reply, "usage/read", turn)
    artifact = turn.request.arg("artifact")
    if state is None or not artifact:
        return reply
    with turn.lock:
        kept = turn.memory.get("placed", {}).get(artifact)
    if kept is None or not gone(turn, artifact):
        return reply
    return reply.with_json({**state, "placements": kept})


def _written_again(status: int, code: str, message: str) -> Bend:
    """A write of a deleted step, refused not_after_latest, answered with ``code``."""
    refusal = Response.error(status, code, message)

    def bend(reply: Response, turn: Turn) -> Response:
        sent = body_of(turn.request)
        if turn.request.endpoint == "versions/write" \
                and error_code(reply) == "not_after_latest" \
                and str(sent.get("version")) in gone(turn, sent.get("artifact")):
            return refusal
        return reply

    return bend


# --- URLs of a deleted version ----------------------------------------------------------


def _urls_noted(reply: Response, turn: Turn) -> Response:
    """The URL paths of every Version read or resumed; a delete revokes its version's."""
    request = turn.request
    data = reply.json() if reply.ok else None
    if request.endpoint in ("versions/read", "artifacts/open") and isinstance(data, dict):
        version = data.get("resume_from") if request.endpoint == "artifacts/open" else data
        if isinstance(version, dict):
            with turn.lock:
                urls = turn.memory.setdefault("urls", {})
                key = (version.get("artifact"), version.get("version"))
                for f in version.get("files") or []:
                    if isinstance(f, dict) and isinstance(f.get("url"), str):
                        urls.setdefault(key, set()).add(urlsplit(f["url"]).path)
    if _deleting(request) and reply.ok:
        sent = body_of(request)
        with turn.lock:
            paths = turn.memory.get("urls", {}).get((sent.get("artifact"), sent.get("version")),
                                                    set())
            turn.memory.setdefault("revoked", set()).update(paths)
    return reply


def _urls_noted_and_timed(reply: Response, turn: Turn) -> Response:
    """As :func:`_urls_noted`, and the time each URL was first revoked."""
    reply = _urls_noted(reply, turn)
    if _deleting(turn.request) and reply.ok:
        now = time.monotonic()
        with turn.lock:
            since = turn.memory.setdefault("since", {})
            for path in turn.memory.get("revoked", set()):
                since.setdefault(path, now)
    return reply


def _revoked(refused: Callable[[Request], bool], status: int, code: str) -> Before:
    """A data-plane request ``refused`` picks, to a URL revoked by a delete, refused."""

    def before(turn: Turn) -> Response | None:
        request = turn.request
        if request.kind == "data" and refused(request):
            with turn.lock:
                if request.path in turn.memory.get("revoked", set()):
                    return Response.error(status, code, "the version was deleted")
        return None

    return before


def _reclaimed_after_a_second(turn: Turn) -> Response | None:
    request = turn.request
    with turn.lock:
        since = turn.memory.get("since", {}).get(request.path)
    if request.kind == "data" and request.method in ("GET", "HEAD") and since is not None \
            and time.monotonic() - since > 1.0:
        return Response.error(404, "not_found", "the bytes were reclaimed")
    return None


# --- deletes refused or answered wrong --------------------------------------------------


def _with_newest_token(turn: Turn) -> Request | None:
    sent = body_of(turn.request)
    with turn.lock:
        newest = turn.t.newest.get(str(sent.get("artifact")))
    return None if newest is None else turn.request.with_json({**sent, "token": newest.token})


def _done_before(reply: Response, turn: Turn) -> Response:
    sent = body_of(turn.request)
    key = (sent.get("artifact"), sent.get("version"))
    with turn.lock:
        done = turn.memory.setdefault("done", set())
        if reply.ok:
            done.add(key)
        elif reply.status == 404 and key in done:
            return deleted(sent)
    return reply


def _with_writer_key(turn: Turn) -> Request | None:
    with turn.lock:
        key = turn.t.good_key(str(body_of(turn.request).get("artifact")))
    return None if key is None or key == key_of(turn.request) else with_key(turn.request, key)


def _oldest_instead(turn: Turn) -> Request | None:
    sent = body_of(turn.request)
    if sent.get("version") is not None:
        return None
    listed = versions_of(turn.upstream, key_of(turn.request), str(sent.get("artifact")))
    return turn.request.with_json({**sent, "version": listed[0].get("version")}) \
        if len(listed) >= 2 else None


def _hidden_everywhere(reply: Response, turn: Turn) -> Response:
    """A deleted version's name is noted alone; reads of it and list rows named so, in
    any artifact, are gone."""
    request, sent = turn.request, body_of(turn.request)
    with turn.lock:
        names = turn.memory.setdefault("gone", {})
        if _deleting(request) and reply.ok:
            names[str(sent.get("version"))] = sent.get("artifact")
            return reply
        names = dict(names)
    data = reply.json() if reply.ok else None
    if not names or not isinstance(data, dict):
        return reply
    if request.endpoint == "versions/read" and data.get("version") in names \
            and request.arg("version", "latest") != "latest":
        return Response.error(404, "not_found", "no such version")
    if request.endpoint == "versions/list":
        return reply.with_json({**data, "versions": [
            v for v in data.get("versions") or []
            if not (isinstance(v, dict) and v.get("version") in names)]})
    return reply


def _staged(turn: Turn) -> bool:
    sent = body_of(turn.request)
    with turn.lock:
        return any(u.artifact == sent.get("artifact") and u.upload not in turn.t.closed
                   and u.write.get("version") == sent.get("version")
                   for u in turn.t.uploads.values())


def _foreign_token_as_newest(turn: Turn) -> Request | None:
    sent = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(sent.get("token")))
        newest = turn.t.newest.get(str(sent.get("artifact")))
    if info is None or newest is None or info.artifact == newest.artifact:
        return None
    return turn.request.with_json({**sent, "token": newest.token})


def _unknown_token(turn: Turn) -> bool:
    with turn.lock:
        return str(body_of(turn.request).get("token")) not in turn.t.tokens


def _own_token(turn: Turn) -> bool:
    sent = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(sent.get("token")))
    return info is not None and info.artifact == sent.get("artifact")


def _deleted_noted(reply: Response, turn: Turn) -> Response:
    if _deleting(turn.request) and reply.ok:
        with turn.lock:
            turn.memory.setdefault("deleted", set()).add(body_of(turn.request).get("artifact"))
    return reply


def _below_latest_after_delete(turn: Turn) -> Request | None:
    request = turn.request
    if request.endpoint != "versions/read" or request.arg("version", "latest") != "latest":
        return None
    art = request.arg("artifact")
    with turn.lock:
        was_deleted = art in turn.memory.get("deleted", set())
    listed = versions_of(turn.upstream, key_of(request), str(art)) if was_deleted else []
    return request.with_query(version=listed[-2]["version"]) if len(listed) >= 2 else None


def claim(turn: Turn, artifact: object, version: object) -> None:
    """The step ``version`` of ``artifact`` held as taken (see claimed_step_refused)."""
    with turn.lock:
        turn.memory.setdefault("claimed", set()).add((str(artifact), str(version)))


def claimed_step_refused(turn: Turn) -> Response | None:
    """A write starting an upload of a claimed step answers 409 version_exists, as an
    implementation that kept a row behind for it would."""
    sent = body_of(turn.request)
    if turn.request.endpoint != "versions/write" or sent.get("upload") is not None:
        return None
    with turn.lock:
        taken = (str(sent.get("artifact")), str(sent.get("version"))) in \
            turn.memory.get("claimed", set())
    return Response.error(409, "version_exists", "the version was taken") if taken else None


def _unknown_claimed(reply: Response, turn: Turn) -> Response:
    if turn.request.endpoint == "versions/delete" and reply.status == 404:
        sent = body_of(turn.request)
        claim(turn, sent.get("artifact"), sent.get("version"))
    return reply


EVERYTHING = On(kind="any", replies="any")
WELL_NAMED = On(DELETE, replies="error", code="invalid_argument",
                when=lambda r: step_of(body_of(r).get("version")) is not None)


def _on_delete(code: str | int) -> On:
    return On(DELETE, replies="error", code=code) if isinstance(code, str) \
        else On(DELETE, replies=code)


def deleting(bend: Bend, first: Before | None = None, **row: Any) -> dict[str, Any]:
    """The fields of a row that watches deletes: every exchange, ``bend`` after them."""
    return dict(on=EVERYTHING, serve=watching_deletes(first), answer=after_deletes(bend),
                tracked=True, **row)


rows(
    Row("ver-deleted-version-still-listed", "VER-7.a",
        "versions/list still lists a deleted version", **deleting(_still_listed)),
    Row("ver-deleted-version-still-read", "VER-7.a",
        "versions/read of a deleted version answers it as before the delete",
        **deleting(_still_read)),
    Row("ver-deleted-version-still-counted", "VER-7.a",
        "artifacts/read's versions count keeps counting deleted versions",
        **deleting(_still_counted)),
    Row("ver-deleted-version-still-in-placements", "VER-7.a",
        "usage placements still count a deleted version's versions and bytes",
        **deleting(_still_placed, first=_placements_before_delete)),
    Row("shape-delete-answers-without-deleted-at", "VER-7.a",
        "versions/delete answers the artifact and version but no deleted_at",
        On(DELETE, when=_deleting), answer=dropped("deleted_at"), tracked=True),
    Row("ver-delete-hides-that-version-name-in-every-artifact", "VER-7.a",
        "after a delete of A/step-N, B/step-N reads 404 and leaves B's list too",
        On(replies="any"), answer=_hidden_everywhere, tracked=True),
    Row("ver-deleted-step-written-again-gets-version-exists", "VER-7.b",
        "writing or committing a deleted step again gets 409 version_exists",
        **deleting(_written_again(409, "version_exists", "the version was committed before"))),
    Row("ver-deleted-step-written-again-gets-404", "VER-7.b",
        "writing a deleted step again gets 404 not_found (the version is gone)",
        **deleting(_written_again(404, "not_found", "the version was deleted"))),
    Row("ver-delete-revokes-the-signed-urls-given-out", "VER-7.c",
        "a signed URL handed out before a delete gets 403 right after it",
        **deleting(_urls_noted, first=_revoked(lambda r: r.method in ("GET", "HEAD"), 403,
                                                "forbidden"))),
    Row("ver-ranged-gets-of-a-deleted-versions-urls-get-404", "VER-7.c",
        "a ranged GET of a URL handed out before the delete gets 404 after it",
        **deleting(_urls_noted, first=_revoked(lambda r: r.header("Range") is not None, 404,
                                                "not_found"))),
    Row("ver-deleted-versions-bytes-reclaimed-a-second-after-the-delete", "VER-7.c",
        "URLs given out before a delete stop serving one second after it",
        **deleting(_urls_noted_and_timed, first=_reclaimed_after_a_second)),
    Row("ver-delete-of-the-latest-answers-200", "VER-7.d",
        "a delete of the latest version answers 200 (and keeps it) instead of 409",
        _on_delete("is_latest"), answer=_answered_deleted, tracked=True),
    Row("ver-delete-with-a-fenced-token-done", "VER-7.d",
        "a delete with a token older than the artifact's epoch deletes the version",
        _on_delete("fenced"), answer=retried(_with_newest_token), tracked=True),
    Row("ver-delete-of-a-deleted-version-answers-200", "VER-7.d",
        "deleting an already deleted version answers 200 again (an idempotent retry)",
        On(DELETE, replies="any", when=_deleting), answer=_done_before, tracked=True),
    Row("ver-delete-with-a-read-key-done", "VER-7.d",
        "a key with read only deletes a version (the delete checks no write scope)",
        _on_delete(403), answer=retried(_with_writer_key), tracked=True),
    Row("ver-delete-without-a-version-deletes-the-oldest", "VER-7.d",
        "versions/delete with no version deletes the artifact's oldest version",
        On(DELETE, when=_deleting), serve=_oldest_instead, tracked=True),
    Row("ver-delete-of-an-uncommitted-version-answers-200", "VER-7.d",
        "a delete of a version with an upload but no commit answers 200, not 404",
        _on_delete(404),
        answer=lambda reply, turn: deleted(body_of(turn.request)) if _staged(turn) else reply,
        tracked=True),
    Row("ver-delete-with-another-artifacts-token-done", "VER-7.d",
        "a delete with a token of another artifact deletes instead of 400",
        WELL_NAMED, answer=retried(_foreign_token_as_newest), tracked=True),
    Row("ver-delete-with-an-unknown-token-gets-404", "VER-7.d",
        "a delete with an unknown token answers 404 not_found instead of 400",
        WELL_NAMED, answer=refused_when(_unknown_token, 404, "not_found", "no such token"),
        tracked=True),
    Row("ver-delete-of-a-malformed-version-gets-404", "VER-7.d",
        "a delete of a malformed version name answers 404 not_found instead of 400",
        On(DELETE, replies="error", code="invalid_argument",
           when=lambda r: step_of(body_of(r).get("version")) is None),
        answer=refused_when(_own_token, 404, "not_found", "no such version"), tracked=True),
    Row("ver-delete-refused-as-unknown-still-tombstones-that-step", "VER-7.d",
        "after a delete of an unknown step gets 404, writing that step gets 409",
        On(("versions/write", *DELETE), replies="any"), serve=claimed_step_refused,
        answer=_unknown_claimed, tracked=True),
    Row("read-latest-after-a-delete-is-the-version-below-it", "READ-1.a",
        "after a delete, versions/read of latest answers the second-highest version",
        On(("versions/read", *DELETE), replies="any"), serve=_below_latest_after_delete,
        answer=_deleted_noted, tracked=True),
)
