"""Bends and tests the open and fork mutants share (m_open.py, m_fork.py, m_auth_tokens.py):
which opens a row matches, the forks a row saw, the resumed Version changed, a refused open
that re-opens the artifact or leaves its holder's name behind."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.rows import Bend
from conformance.mutants.rows import Turn
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import artifact_info
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import open_latest
from conformance.mutants.tracking import with_key

__all__ = ["FRESH", "LATEST", "SOURCE", "as_writer_of_new", "fork_source", "noted_forks",
           "refusal_names_holder", "reopened_for", "resumed", "resuming", "version_read"]

Json = dict[str, Any]
#: A well-formed fork source: ``o41://project/name/step-NNNNNNNN``.
SOURCE = re.compile(r"^o41://([^/]+/[^/]+)/(step-\d{8})$")


def resuming(resume: Any) -> Callable[[Request], bool]:
    """An open whose body's ``resume`` is ``resume`` (None: also when it has none)."""
    return lambda request: request.method == "POST" and body_of(request).get("resume") == resume


LATEST, FRESH = resuming("latest"), resuming(None)


def fork_source(request: Request) -> tuple[str, str] | None:
    """(artifact, version) of a well-formed fork open."""
    resume = body_of(request).get("resume")
    m = SOURCE.match(resume) if request.method == "POST" and isinstance(resume, str) else None
    return (m[1], m[2]) if m else None


def noted_forks(turn: Turn, reply: Response) -> dict[str, tuple[str, str]]:
    """The sources of the forks this row saw succeed (artifact -> source), the turn's own
    open noted first when it is one."""
    src = fork_source(turn.request) if turn.request.endpoint == "artifacts/open" else None
    with turn.lock:
        forks = turn.memory.setdefault("forks", {})
        if src and reply.ok:
            forks[artifact_of(turn.request)] = src
        return dict(forks)


def resumed(change: Callable[[Json, Turn], Json | None]) -> Bend:
    """An open's reply whose ``resume_from`` (when a Version) is changed by ``change``."""

    def bend(reply: Response, turn: Turn) -> Response:
        opened = reply.json()
        version = opened.get("resume_from")
        changed = change(version, turn) if isinstance(version, dict) else None
        return reply if changed is None else reply.with_json({**opened, "resume_from": changed})

    return bend


def reopened_for(holder_of: Callable[[Turn, str], str | None]) -> Bend:
    """After a refused open, the artifact opened at latest for the holder ``holder_of``
    names (the turn, the artifact's current holder; None: nobody)."""

    def bend(reply: Response, turn: Turn) -> Response:
        art = str(artifact_of(turn.request))
        info = artifact_info(turn.upstream, key_of(turn.request), art)
        holder = holder_of(turn, str((info or {}).get("holder") or ""))
        if holder:
            open_latest(turn.upstream, key_of(turn.request), art, holder)
        return reply

    return bend


def refusal_names_holder(*codes: str) -> Bend:
    """A refused open with one of ``codes`` still records its holder as the artifact's:
    artifacts/read names it until a successful open names its own."""

    def bend(reply: Response, turn: Turn) -> Response:
        request, answer = turn.request, reply.json()
        err = answer.get("error") if isinstance(answer, dict) else None
        with turn.lock:
            named = turn.memory.setdefault("named", {})
            if request.endpoint == "artifacts/open":
                holder = body_of(request).get("holder")
                if isinstance(err, dict) and err.get("code") in codes:
                    if isinstance(holder, str) and holder:
                        named[artifact_of(request)] = holder
                elif reply.ok and isinstance(answer, dict):
                    named.pop(answer.get("artifact"), None)
                return reply
            name = named.get(answer.get("artifact")) if reply.ok and isinstance(answer,
                                                                                dict) else None
        return reply if name is None else reply.with_json(dict(answer, holder=name))

    return bend


def as_writer_of_new(turn: Turn) -> Request | None:
    """An open refused 403 of an artifact nobody opened, sent with a key that worked."""
    with turn.lock:
        key = turn.t.good_key()
        known = artifact_of(turn.request) in turn.t.opens
    return None if key is None or known or key == key_of(turn.request) \
        else with_key(turn.request, key)


def version_read(turn: Turn, artifact: str, version: str) -> Any:
    """``version`` of ``artifact`` with its URLs, read with the request's key (None if
    refused)."""
    reply = api_get(turn.upstream, "versions/read", key_of(turn.request), artifact=artifact,
                    version=version, urls="1")
    return reply.json() if reply.ok else None
