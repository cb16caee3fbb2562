"""Mutants of the "Words" section: a holder made up when not given (FENCE-2.f). One row
each (rows.py); both keep in their memory the holders the server made up for opens
that gave none."""

from __future__ import annotations

from conformance.mutants.base import Response
from conformance.mutants.reads import obj
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import noted
from conformance.mutants.rows import recalled
from conformance.mutants.rows import rows

OPEN, READ = "artifacts/open", "artifacts/read"


def _made_up(reply: Response, turn: Turn) -> list[object]:
    """The holder an open that gave none was answered with."""
    request = turn.request
    return [reply.json().get("holder")] if request.endpoint == OPEN \
        and "holder" not in obj(request) else []


def made_up_holders(then: Bend) -> Bend:
    """Notes each made-up holder (``recalled("made_up", holder, turn)``), then ``then``."""
    return noted("made_up", _made_up, then)


def _stored_as_null(reply: Response, turn: Turn) -> Response:
    state = reply.json()
    if turn.request.endpoint == READ and recalled("made_up", state.get("holder"), turn):
        return reply.with_json({**state, "holder": None})
    return reply


def _fenced_unnamed(reply: Response, turn: Turn) -> Response:
    opened = reply.json()
    fenced = opened.get("fenced")
    if isinstance(fenced, dict) and recalled("made_up", fenced.get("holder"), turn):
        return reply.with_json({**opened, "fenced": {**fenced, "holder": None}})
    return reply


rows(
    # The made-up holder was answered but never stored.
    Row("made-up-holder-stored-as-null", "FENCE-2.f",
        "an open without holder answers a made-up one but artifacts/read shows null",
        On((OPEN, READ)), answer=made_up_holders(_stored_as_null)),
    # The made-up id was never kept: the next open names the fenced box as null.
    Row("made-up-holder-not-named-by-fenced", "FENCE-2.f",
        "an open fencing a box that gave no holder answers fenced.holder null",
        On((OPEN,)), answer=made_up_holders(_fenced_unnamed)),
)
