"""Mutants of FENCE-* subtler than m_fence.py's: fencing that holds for the usual case and
breaks only for a token two opens behind, a relaunch with the same holder id, two racing
opens, a fork or a fresh open into an artifact opened before, an open refused for its key,
or a token of another artifact. One row each (rows.py), on m_fence.py's bends where they
fit."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.m_fence import _is_open
from conformance.mutants.m_fence import fenced_as
from conformance.mutants.m_fence import fenced_error
from conformance.mutants.m_fence import open_refused
from conformance.mutants.m_fence import reopened_for_newest
from conformance.mutants.m_fence import stale_commit_replayed
from conformance.mutants.m_fence import stale_write_retried
from conformance.mutants.m_fence import upload_adopted
from conformance.mutants.open_bends import SOURCE
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import retried
from conformance.mutants.rows import rows
from conformance.mutants.tracking import Facts
from conformance.mutants.tracking import OpenInfo
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of
from conformance.mutants.tracking import with_key

OPEN, WRITE, COMMIT = ("artifacts/open",), ("versions/write",), ("versions/commit",)


def _behind(t: Facts, stale: OpenInfo) -> int:
    """How many successful opens of its artifact came after ``stale``."""
    return sum(1 for o in t.opens.get(stale.artifact, []) if o.seq > stale.seq)


def _forking(request: Request) -> bool:
    resume = body_of(request).get("resume")
    return _is_open(request) and isinstance(resume, str) and resume.startswith("o41://")


# --- FENCE-1.a --------------------------------------------------------------------------

STARTED = "X-Mutant-Started"


def _timed(turn: Turn) -> Request:
    return turn.request.with_header(STARTED, repr(time.monotonic()))


def _overlapping_epoch(reply: Response, turn: Turn) -> Response:
    """An open answered while another open of the artifact was under way reports the
    epoch of the one answered first."""
    opened, ended = reply.json(), time.monotonic()
    started = float(turn.request.header(STARTED) or ended)
    with turn.lock:
        done = turn.memory.setdefault("done", {}).setdefault(opened.get("artifact"), [])
        overlap = [e for (end, e) in done if end > started]
        done.append((ended, opened.get("epoch")))
    return reply.with_json(dict(opened, epoch=overlap[-1])) if overlap else reply


def _first_epoch_again(reply: Response, turn: Turn) -> Response:
    opened = reply.json()
    with turn.lock:
        opens = list(turn.t.opens.get(opened["artifact"], []))
    return reply.with_json(dict(opened, epoch=opens[0].epoch)) if len(opens) >= 2 else reply


# --- FENCE-2.a / FENCE-2.b / FENCE-3.a --------------------------------------------------


def _two_behind(turn: Turn, stale: OpenInfo, newest: OpenInfo) -> bool:
    with turn.lock:
        return _behind(turn.t, stale) >= 2


def _upload_two_behind(turn: Turn, up: UploadInfo, newest_seq: int) -> bool:
    stale = turn.t.tokens.get(up.token)
    return stale is not None and _behind(turn.t, stale) >= 2


def _before_same_holder_relaunch(turn: Turn, up: UploadInfo, newest_seq: int) -> bool:
    stale = turn.t.tokens.get(up.token)
    newest = turn.t.newest.get(up.artifact)
    return (stale is not None and newest is not None and stale.holder == newest.holder
            and (up.complete_seq or 0) < newest_seq)


def _newest_was(test: Callable[[Any], bool]) -> Bend:
    """A stale write is let in when the newest open's ``resume`` passes ``test``."""
    return stale_write_retried(lambda turn, stale, newest: test(newest.resume))


# --- FENCE-2.c --------------------------------------------------------------------------


def _by_the_same_holder(turn: Turn, up: UploadInfo, mine: OpenInfo) -> bool:
    with turn.lock:
        first = turn.t.tokens.get(up.token)
    return first is not None and first.holder == mine.holder


# --- FENCE-2.d --------------------------------------------------------------------------


def _refused_opener_named(reply: Response, turn: Turn) -> Response:
    """A refused open's holder is noted; the next successful open's fenced names it."""
    art, holder = artifact_of(turn.request), body_of(turn.request).get("holder")
    if 400 <= reply.status < 500 and isinstance(holder, str):
        with turn.lock:
            turn.memory.setdefault("refused", {})[art] = holder
        return reply
    with turn.lock:
        name = turn.memory.setdefault("refused", {}).pop(art, None) if reply.ok else None
    opened = reply.json()
    fenced = opened.get("fenced") if isinstance(opened, dict) else None
    if name and isinstance(fenced, dict):
        return reply.with_json(dict(opened, fenced=dict(fenced, holder=name)))
    return reply


def _latest_writer(turn: Turn, reply: Response) -> object:
    opened = reply.json()
    if not isinstance(opened.get("fenced"), dict):
        return ...
    listed = versions_of(turn.upstream, key_of(turn.request), str(opened.get("artifact")))
    if not listed:
        return ...
    fenced = {"epoch": listed[-1].get("epoch"), "holder": listed[-1].get("holder")}
    return ... if fenced == opened["fenced"] else fenced


# --- FENCE-2.e --------------------------------------------------------------------------


def _upload_token_instead(turn: Turn) -> Request | None:
    sent = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(sent.get("token"))
        up = turn.t.uploads.get(sent.get("upload"))
    if info is None or up is None or info.artifact == sent.get("artifact") \
            or up.artifact != sent.get("artifact"):
        return None
    return turn.request.with_json(dict(sent, token=up.token))


def _newest_of_same_name(turn: Turn) -> Request | None:
    """A token of an artifact of the same name in another project, as this one's newest."""
    sent, art, key = body_of(turn.request), artifact_of(turn.request), key_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(sent.get("token")))
        newest = turn.t.newest.get(str(art))
    if info is None or newest is None or not art or info.artifact == art or not key \
            or info.artifact.split("/")[-1] != art.split("/")[-1]:
        return None
    return with_key(turn.request.with_json(dict(sent, token=newest.token)), key)


rows(
    Row("fence_racing_opens_share_epoch", "FENCE-1.a",
        "an open that overlapped another open of the same artifact reports its epoch",
        On(OPEN, when=_is_open), serve=_timed, answer=_overlapping_epoch, tracked=True),
    Row("fence_fork_into_opened_artifact_restarts_epoch", "FENCE-1.a",
        "a fork into an empty artifact opened before reports its first epoch again",
        On(OPEN, when=_forking), answer=_first_epoch_again, tracked=True),
    # Only the token of the open just before the newest is fenced (epoch == newest - 1).
    Row("fence_stale_write_ok_two_opens_behind", "FENCE-2.a",
        "a write with a token two or more opens behind the newest is accepted",
        fenced_error(WRITE), answer=stale_write_retried(_two_behind), tracked=True),
    Row("fence-fork-into-opened-artifact-leaves-old-token-writing", "FENCE-2.a",
        "after a fork into an opened empty artifact, the earlier token still writes",
        fenced_error(WRITE),
        answer=_newest_was(lambda resume: isinstance(resume, str)
                           and SOURCE.match(resume) is not None), tracked=True),
    Row("fence-fresh-reopen-of-empty-artifact-leaves-old-token-writing", "FENCE-2.a",
        "after a fresh open of an opened empty artifact, the earlier token still writes",
        fenced_error(WRITE), answer=_newest_was(lambda resume: resume is None), tracked=True),
    Row("fence_stale_commit_ok_two_opens_behind", "FENCE-2.b",
        "a commit with a token two or more opens behind the newest commits",
        fenced_error(COMMIT), answer=stale_commit_replayed(_upload_two_behind), tracked=True),
    Row("fence_upload_adopted_by_same_holder_relaunch", "FENCE-2.c",
        "a relaunch with the same holder id commits the upload of its previous launch",
        On(COMMIT, replies=409), answer=upload_adopted(_by_the_same_holder), tracked=True),
    Row("fence_fenced_names_refused_opener", "FENCE-2.d",
        "after a refused open, the next open's fenced names the refused holder",
        On(OPEN, replies="any", when=_is_open), answer=_refused_opener_named, tracked=True),
    Row("fence_fenced_null_for_fork_into_opened_artifact", "FENCE-2.d",
        "a fork into an empty artifact opened before reports fenced: null",
        On(OPEN, when=_forking),
        answer=fenced_as(lambda turn, reply: ... if reply.json().get("fenced") is None
                         else None), tracked=True),
    Row("fence-fenced-names-the-latest-versions-writer", "FENCE-2.d",
        "fenced names who wrote the latest version, not the open just before",
        On(OPEN), answer=fenced_as(_latest_writer), tracked=True),
    Row("fence_foreign_token_commit_uses_upload_token", "FENCE-2.e",
        "a commit with another artifact's token commits with the upload's own token",
        On(COMMIT), serve=_upload_token_instead, tracked=True),
    Row("fence-token-of-same-name-in-another-project-accepted", "FENCE-2.e",
        "a token of 'q/run' is accepted for 'p/run' (looked up by name, not project)",
        On(("versions/write", "versions/commit"), replies=400),
        answer=retried(_newest_of_same_name), tracked=True),
    Row("fence_preopen_upload_commits_after_same_holder_relaunch", "FENCE-3.a",
        "an upload complete before a relaunch with the same holder id commits after it",
        fenced_error(COMMIT), answer=stale_commit_replayed(_before_same_holder_relaunch),
        tracked=True),
    # An open refused 401 (unknown or missing key) still re-opens the artifact for its
    # newest holder: the epoch rises and the running writer is fenced.
    Row("fence_unauthenticated_open_bumps_epoch", "FENCE-4.a",
        "an open refused with 401 (bad key) still raises the epoch",
        open_refused(401), answer=reopened_for_newest, tracked=True),
)
