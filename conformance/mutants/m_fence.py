"""Mutants of FENCE-*: epochs, fencing of stale tokens, the atomic open, refused opens."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import (
    Tracked,
    UploadInfo,
    artifact_info,
    artifact_of,
    body_of,
    key_of,
    open_latest,
    replay_upload,
)


def _is_open(request: Request) -> bool:
    return request.endpoint == "artifacts/open" and request.method == "POST"


def _code(response: Response) -> str | None:
    data = response.json()
    try:
        return str(data["error"]["code"])
    except (KeyError, TypeError):
        return None


# --- FENCE-1.a: epochs rise -------------------------------------------------------------


@mutant
class EpochKeptFreshEmpty(Tracked):
    name = "fence_epoch_kept_fresh_reopen_empty"
    clause = "FENCE-1.a"
    summary = "a fresh open of an existing empty artifact reports the previous epoch again"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not (_is_open(request) and response.ok and body.get("resume") is None):
            return response
        reply = response.json()
        with self.lock:
            opens = self.t.opens.get(reply["artifact"], [])
        if len(opens) >= 2 and reply.get("resume_from") is None:
            return response.with_json(dict(reply, epoch=opens[-2].epoch))
        return response


@mutant
class EpochKeptSameHolder(Tracked):
    name = "fence_epoch_kept_relaunch_same_holder"
    clause = "FENCE-1.a"
    summary = "a latest open by the holder that opened last reports that open's epoch again"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not (_is_open(request) and response.ok and body.get("resume") == "latest"):
            return response
        reply = response.json()
        with self.lock:
            opens = self.t.opens.get(reply["artifact"], [])
        if len(opens) >= 2 and opens[-2].holder == reply["holder"]:
            return response.with_json(dict(reply, epoch=opens[-2].epoch))
        return response


# --- FENCE-2.a: stale writes ----------------------------------------------------------


class _StaleWrite(Tracked):
    """A fenced write is sent again with the artifact's newest token when ``applies``."""

    def applies(self, stale: Any, newest: Any, request: Request, upstream: Upstream) -> bool:
        raise NotImplementedError

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/write" or _code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            stale = self.t.tokens.get(body.get("token"))
            newest = self.t.newest.get(body.get("artifact"))
        if stale is None or newest is None or not self.applies(stale, newest, request, upstream):
            return response
        retry = request.with_json(dict(body, token=newest.token))
        again = upstream.send(retry)
        with self.lock:
            self.observe(retry, again)
        return again if again.ok else response


@mutant
class StaleWriteSameHolder(_StaleWrite):
    name = "fence_stale_write_ok_same_holder"
    clause = "FENCE-2.a"
    summary = "a write with a stale token is accepted when the newest open has the same holder"

    def applies(self, stale: Any, newest: Any, request: Request, upstream: Upstream) -> bool:
        return stale.holder == newest.holder


@mutant
class StaleWriteManyVersions(_StaleWrite):
    name = "fence_stale_write_ok_at_3_versions"
    clause = "FENCE-2.a"
    summary = "a write with a stale token is accepted once the artifact has 3 or more versions"

    def applies(self, stale: Any, newest: Any, request: Request, upstream: Upstream) -> bool:
        info = artifact_info(upstream, key_of(request), stale.artifact) or {}
        return int(info.get("versions") or 0) >= 3


# --- FENCE-2.b / FENCE-3.a: stale commits --------------------------------------------


class _StaleCommit(Tracked):
    """A fenced commit whose upload matches ``applies`` is written again under the newest
    token and committed; the client gets the Version (``hide`` False) or the 409."""

    hide = False

    def applies(self, up: UploadInfo, newest_seq: int) -> bool:
        raise NotImplementedError

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or _code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(body.get("upload"))
            newest = self.t.newest.get(body.get("artifact"))
            stale = self.t.tokens.get(body.get("token"))
        if up is None or newest is None or stale is None or not up.complete:
            return response
        if up.token != body.get("token") or stale.epoch >= newest.epoch:
            return response
        if not self.applies(up, newest.seq):
            return response
        landed = replay_upload(upstream, up, newest.token, newest.key)
        return response if self.hide or not landed.ok else landed


@mutant
class StaleCommitAfterOpen(_StaleCommit):
    name = "fence_stale_commit_ok_upload_after_open"
    clause = "FENCE-2.b"
    summary = "a stale commit succeeds when its files were still arriving after the newer open"

    def applies(self, up: UploadInfo, newest_seq: int) -> bool:
        return (up.complete_seq or 0) > newest_seq


@mutant
class StaleCommitLandsBehind(_StaleCommit):
    name = "fence_stale_commit_409_but_lands"
    clause = "FENCE-2.b"
    summary = "a stale commit answers 409 fenced but its version lands anyway (upload after open)"
    hide = True

    def applies(self, up: UploadInfo, newest_seq: int) -> bool:
        return (up.complete_seq or 0) > newest_seq


@mutant
class PreOpenUploadCommits(_StaleCommit):
    name = "fence_preopen_upload_commits_after_open"
    clause = "FENCE-3.a"
    summary = "an upload complete before a newer open still commits after it"

    def applies(self, up: UploadInfo, newest_seq: int) -> bool:
        return (up.complete_seq or 0) < newest_seq


@mutant
class PreOpenUploadLandsBehind(_StaleCommit):
    name = "fence_preopen_upload_409_but_lands"
    clause = "FENCE-3.a"
    summary = "a stale commit of an upload complete before the open is 409 yet becomes visible"
    hide = True

    def applies(self, up: UploadInfo, newest_seq: int) -> bool:
        return (up.complete_seq or 0) < newest_seq


# --- FENCE-2.c: an upload belongs to its token ---------------------------------------


@mutant
class UploadAdopted(Tracked):
    name = "fence_upload_adopted_by_newer_token"
    clause = "FENCE-2.c"
    summary = "committing another token's upload with a newer token commits it"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or _code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(body.get("upload"))
            mine = self.t.tokens.get(body.get("token"))
            newest = self.t.newest.get(body.get("artifact"))
        if up is None or mine is None or newest is None or up.token == mine.token:
            return response
        if mine.token != newest.token or not up.complete:
            return response
        landed = replay_upload(upstream, up, mine.token, key_of(request))
        return landed if landed.ok else response


@mutant
class UploadOtherTokenCode(Tracked):
    name = "fence_upload_other_token_400"
    clause = "FENCE-2.c"
    summary = "committing an older token's upload with a newer token is 400, not 409 fenced"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or _code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(body.get("upload"))
        if up is not None and up.token != body.get("token"):
            return Response.error(400, "invalid_argument", "the upload belongs to another token")
        return response


# --- FENCE-2.d: the open names whom it fenced ----------------------------------------


def _rewrite_fenced(response: Response, fenced: Any) -> Response:
    return response.with_json(dict(response.json(), fenced=fenced))


@mutant
class FencedNullSameHolder(Tracked):
    name = "fence_fenced_null_same_holder"
    clause = "FENCE-2.d"
    summary = "a relaunch with the same holder id reports fenced: null"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_is_open(request) and response.ok):
            return response
        fenced = response.json().get("fenced")
        if isinstance(fenced, dict) and fenced.get("holder") == response.json().get("holder"):
            return _rewrite_fenced(response, None)
        return response


@mutant
class FencedFirstEpoch(Tracked):
    name = "fence_fenced_names_first_open"
    clause = "FENCE-2.d"
    summary = "from the third open on, fenced names the artifact's first open, not the last"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_is_open(request) and response.ok):
            return response
        with self.lock:
            opens = list(self.t.opens.get(response.json()["artifact"], []))
        if len(opens) >= 3:
            return _rewrite_fenced(response, {"epoch": opens[0].epoch, "holder": opens[0].holder})
        return response


# --- FENCE-2.e: unknown and foreign tokens ---------------------------------------------


@mutant
class ForeignTokenAccepted(Tracked):
    name = "fence_foreign_token_same_project_ok"
    clause = "FENCE-2.e"
    summary = "a write with another artifact's token of the same project uses this artifact's"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        if request.endpoint != "versions/write":
            return None
        body = body_of(request)
        with self.lock:
            info = self.t.tokens.get(body.get("token"))
            mine = self.t.newest.get(body.get("artifact"))
        art = str(body.get("artifact"))
        if info is None or mine is None or info.artifact == art:
            return None
        if info.artifact.split("/")[0] != art.split("/")[0]:
            return None
        return request.with_json(dict(body, token=mine.token))


@mutant
class UnknownTokenCommit404(Tracked):
    name = "fence_unknown_token_commit_404"
    clause = "FENCE-2.e"
    summary = "a commit with an unknown token is 404 not_found instead of 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/commit" and _code(response) == "invalid_argument":
            with self.lock:
                known = body_of(request).get("token") in self.t.tokens
            if not known:
                return Response.error(404, "not_found", "no such token")
        return response


# --- FENCE-4.a: failed opens fence nobody ---------------------------------------------


class _FailedOpenBumps(Tracked):
    """After a failed open of ``statuses`` on an existing artifact, the mutant opens it again
    with the newest holder's own id (so artifacts/read shows the same holder)."""

    statuses: tuple[int, ...] = ()

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _is_open(request) or response.status not in self.statuses:
            return response
        art = artifact_of(request)
        with self.lock:
            newest = self.t.newest.get(art or "")
        if newest is not None:
            open_latest(upstream, newest.key, newest.artifact, newest.holder)
        return response


@mutant
class InvalidOpenBumps(_FailedOpenBumps):
    name = "fence_invalid_open_bumps_epoch"
    clause = "FENCE-4.a"
    summary = "an open refused with 400 (bad place, holder or resume) still raises the epoch"
    statuses = (400,)


@mutant
class NotFoundOpenBumps(_FailedOpenBumps):
    name = "fence_unknown_source_open_bumps_epoch"
    clause = "FENCE-4.a"
    summary = "a fork open refused with 404 (unknown source) still raises the target's epoch"
    statuses = (404,)
