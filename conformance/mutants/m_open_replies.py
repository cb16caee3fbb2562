"""Mutants of what opens and artifacts/read answer (API-1.b, API-1.e, API-1.g, FENCE-2.f),
written as a blind adversary would from docs/contract.md alone: a Version built from the
artifact's state instead of the version's own, a count or a time that goes stale, keys
that look optional left out. One row each (rows.py); the counts and times a row needs are
kept in its memory."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import body
from conformance.mutants.rows import rows
from conformance.mutants.rows import versions
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of

Json = dict[str, Any]
OPEN, READ = ("artifacts/open",), ("artifacts/read",)


def _resume_of_the_open(opened: Json) -> Json | None:
    resume = opened.get("resume_from")
    if not isinstance(resume, dict) or resume.get("artifact") != opened.get("artifact"):
        return None
    return dict(opened, resume_from=dict(resume, epoch=opened.get("epoch"),
                                         holder=opened.get("holder")))


def _made_up_holders_null(reply: Response, turn: Turn) -> Response:
    """Opens without a holder are noted (artifact, epoch); Versions they wrote read back
    with holder null."""
    request = turn.request
    if request.endpoint == "artifacts/open":
        if "holder" not in body_of(request):
            opened = reply.json()
            with turn.lock:
                turn.memory.setdefault("made", set()).add((opened.get("artifact"),
                                                           opened.get("epoch")))
        return reply
    with turn.lock:
        made = set(turn.memory.get("made", set()))
    return versions(lambda v: dict(v, holder=None) if (v.get("artifact"), v.get("epoch"))
                    in made else v)(reply, turn)


def _count_keeps_deleted(reply: Response, turn: Turn) -> Response:
    """Deletes are noted per artifact; artifacts/read counts them back in."""
    state = reply.json()
    if not reply.ok or not isinstance(state, dict):
        return reply
    with turn.lock:
        gone = turn.memory.setdefault("gone", {})
        if turn.request.endpoint == "versions/delete":
            art = artifact_of(turn.request)
            gone[art] = gone.get(art, 0) + 1
            return reply
        extra = gone.get(state.get("artifact"), 0)
    if not extra or not isinstance(state.get("versions"), int):
        return reply
    return reply.with_json(dict(state, versions=state["versions"] + extra))


def _created_at_of_newest_open(reply: Response, turn: Turn) -> Response:
    """Opens are counted and timed per artifact; from the second on, artifacts/read's
    created_at is the newest open's time."""
    state = reply.json()
    with turn.lock:
        seen = turn.memory.setdefault("opened", {})
        if turn.request.endpoint == "artifacts/open":
            now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            seen[state.get("artifact")] = (seen.get(state.get("artifact"), (0, None))[0] + 1,
                                           now)
            return reply
        count, when = seen.get(state.get("artifact"), (0, None))
    return reply if count < 2 or when is None else reply.with_json(dict(state, created_at=when))


rows(
    Row("open-resume-from-epoch-and-holder-of-the-resuming-open", "API-1.b",
        "resume_from says the resuming open's epoch and holder, not the writer's",
        On(OPEN), answer=body(_resume_of_the_open), tracked=True),
    Row("fence-made-up-holder-missing-from-its-versions", "FENCE-2.f",
        "versions written under a made-up holder read back with holder null",
        On((*OPEN, "versions/read", "versions/list", "versions/commit")),
        answer=_made_up_holders_null, tracked=True),
    Row("artifact-read-versions-count-keeps-deleted-versions", "API-1.e",
        "artifacts/read's versions count does not drop when a version is deleted",
        On((*READ, "versions/delete"), replies="any"), answer=_count_keeps_deleted,
        tracked=True),
    Row("artifact-created-at-moves-with-every-open", "API-1.e",
        "artifacts/read's created_at is the newest open's time, not the creation's",
        On((*OPEN, *READ)), answer=_created_at_of_newest_open, tracked=True),
    Row("artifact-read-forked-from-key-left-out-when-null", "API-1.e",
        "artifacts/read has no forked_from key (rather than null) for a non-fork",
        On(READ), answer=body(lambda state: None if state.get("forked_from") is not None
                              else {k: v for k, v in state.items() if k != "forked_from"}),
        tracked=True),
    Row("open-fenced-key-left-out-when-null", "API-1.g",
        "an open that fenced nobody has no fenced key (rather than null)",
        On(OPEN), answer=body(lambda opened: None if opened.get("fenced") is not None
                              else {k: v for k, v in opened.items() if k != "fenced"}),
        tracked=True),
    Row("open-warnings-are-objects", "API-1.g",
        "an open's warnings are {code, message} objects instead of strings",
        On(OPEN), answer=body(lambda opened: dict(opened, warnings=[
            {"code": "placement", "message": w} for w in opened["warnings"]])
            if opened.get("warnings") else None), tracked=True),
)
