"""Subtler mutants of FENCE-*: fencing that holds for the usual case and breaks only for a
token two opens behind, a relaunch with the same holder id, two racing opens, a fork into an
artifact opened before, an open refused for its key, or a token of another artifact."""

from __future__ import annotations

import time
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.m_fence import (
    _is_open,
    fenced_error,
    open_refused,
    reopened_for_newest,
    stale_commit_replayed,
    stale_write_retried,
)
from conformance.mutants.rows import Row, Turn, rows
from conformance.mutants.tracking import (
    OpenInfo,
    Tracked,
    UploadInfo,
    artifact_of,
    body_of,
    key_of,
    replay_upload,
)


def _behind(t: Any, stale: OpenInfo) -> int:
    """How many successful opens of its artifact came after ``stale``."""
    opens = t.opens.get(stale.artifact, [])
    return sum(1 for o in opens if o.seq > stale.seq)


# --- FENCE-1.a ---------------------------------------------------------------------------


@mutant
class RacingOpensShareEpoch(Tracked):
    """Two opens of one artifact that overlap in time: the one answered second reports the
    epoch of the one answered first (a read-then-write of the epoch without a lock)."""

    name = "fence_racing_opens_share_epoch"
    clause = "FENCE-1.a"
    summary = "an open that overlapped another open of the same artifact reports its epoch"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if not _is_open(request):
            return super().handle(request, upstream)
        started = time.monotonic()
        response = super().handle(request, upstream)
        reply = response.json()
        if not response.ok or not isinstance(reply, dict):
            return response
        art, ended = reply.get("artifact"), time.monotonic()
        with self.lock:
            done = self.state.setdefault("done", {}).setdefault(art, [])
            overlap = [e for (end, e) in done if end > started]
            done.append((ended, reply.get("epoch")))
        if overlap:
            return response.with_json(dict(reply, epoch=overlap[-1]))
        return response


@mutant
class ForkIntoOpenedRestartsEpoch(Tracked):
    """A fork into an artifact that was opened before (and is still empty) reports the
    artifact's first epoch again: the fork path starts the artifact's counter over."""

    name = "fence_fork_into_opened_artifact_restarts_epoch"
    clause = "FENCE-1.a"
    summary = "a fork into an empty artifact opened before reports its first epoch again"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        resume = body_of(request).get("resume")
        if not (_is_open(request) and response.ok and isinstance(resume, str)
                and resume.startswith("o41://")):
            return response
        reply = response.json()
        with self.lock:
            opens = list(self.t.opens.get(reply["artifact"], []))
        if len(opens) >= 2:
            return response.with_json(dict(reply, epoch=opens[0].epoch))
        return response


# --- FENCE-2.a / FENCE-2.b ---------------------------------------------------------------


# --- FENCE-2.c ---------------------------------------------------------------------------


@mutant
class UploadAdoptedBySameHolder(Tracked):
    """An upload started by an older token is committed by the newer token of a relaunch
    with the same holder id (the upload is checked against the holder, not the token)."""

    name = "fence_upload_adopted_by_same_holder_relaunch"
    clause = "FENCE-2.c"
    summary = "a relaunch with the same holder id commits the upload of its previous launch"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or response.status != 409:
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(body.get("upload"))
            mine = self.t.tokens.get(body.get("token"))
            first = self.t.tokens.get(up.token) if up else None
        if up is None or mine is None or first is None or up.token == mine.token:
            return response
        if first.holder != mine.holder or not up.complete:
            return response
        landed = replay_upload(upstream, up, mine.token, key_of(request))
        return landed if landed.ok else response


# --- FENCE-2.d ---------------------------------------------------------------------------


@mutant
class FencedNamesRefusedOpener(Tracked):
    """A refused open (any 4xx) that named a holder is remembered as the artifact's holder:
    the next successful open reports it as the one it fenced."""

    name = "fence_fenced_names_refused_opener"
    clause = "FENCE-2.d"
    summary = "after a refused open, the next open's fenced names the refused holder"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _is_open(request):
            return response
        art, holder = artifact_of(request), body_of(request).get("holder")
        refused = self.state.setdefault("refused", {})
        if 400 <= response.status < 500 and isinstance(holder, str):
            with self.lock:
                refused[art] = holder
            return response
        reply = response.json()
        with self.lock:
            name = refused.pop(art, None) if response.ok else None
        fenced = reply.get("fenced") if isinstance(reply, dict) else None
        if name and isinstance(fenced, dict):
            return response.with_json(dict(reply, fenced=dict(fenced, holder=name)))
        return response


@mutant
class FencedNullForkIntoOpened(Tracked):
    """A fork into an artifact that was opened before reports ``fenced: null``."""

    name = "fence_fenced_null_for_fork_into_opened_artifact"
    clause = "FENCE-2.d"
    summary = "a fork into an empty artifact opened before reports fenced: null"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        resume = body_of(request).get("resume")
        if _is_open(request) and response.ok and isinstance(resume, str) \
                and resume.startswith("o41://"):
            reply = response.json()
            if reply.get("fenced") is not None:
                return response.with_json(dict(reply, fenced=None))
        return response


# --- FENCE-2.e ---------------------------------------------------------------------------


@mutant
class ForeignTokenCommitUsesUploadToken(Tracked):
    """A commit with another artifact's token is run with the token that started the upload
    (the commit looks the upload up and trusts its token, not the one sent)."""

    name = "fence_foreign_token_commit_uses_upload_token"
    clause = "FENCE-2.e"
    summary = "a commit with another artifact's token commits with the upload's own token"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        if request.endpoint != "versions/commit":
            return None
        body = body_of(request)
        with self.lock:
            info = self.t.tokens.get(body.get("token"))
            up = self.t.uploads.get(body.get("upload"))
        if info is None or up is None or info.artifact == body.get("artifact"):
            return None
        if up.artifact != body.get("artifact"):
            return None
        return request.with_json(dict(body, token=up.token))


# --- FENCE-3.a ---------------------------------------------------------------------------


# --- FENCE-4.a ---------------------------------------------------------------------------


def _two_behind(turn: Turn, stale: OpenInfo) -> bool:
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


rows(
    # Only the token of the open just before the newest is fenced (epoch == newest - 1).
    Row("fence_stale_write_ok_two_opens_behind", "FENCE-2.a",
        "a write with a token two or more opens behind the newest is accepted",
        fenced_error(("versions/write",)),
        answer=stale_write_retried(lambda turn, stale, newest: _two_behind(turn, stale)),
        tracked=True),
    Row("fence_stale_commit_ok_two_opens_behind", "FENCE-2.b",
        "a commit with a token two or more opens behind the newest commits",
        fenced_error(("versions/commit",)), answer=stale_commit_replayed(_upload_two_behind),
        tracked=True),
    Row("fence_preopen_upload_commits_after_same_holder_relaunch", "FENCE-3.a",
        "an upload complete before a relaunch with the same holder id commits after it",
        fenced_error(("versions/commit",)),
        answer=stale_commit_replayed(_before_same_holder_relaunch), tracked=True),
    # An open refused 401 (unknown or missing key) still re-opens the artifact for its
    # newest holder: the epoch rises and the running writer is fenced.
    Row("fence_unauthenticated_open_bumps_epoch", "FENCE-4.a",
        "an open refused with 401 (bad key) still raises the epoch",
        open_refused(401), answer=reopened_for_newest, tracked=True),
)
