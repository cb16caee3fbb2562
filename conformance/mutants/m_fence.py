"""Mutants of FENCE-*: epochs, fencing of stale tokens, the atomic open, refused opens; one
row each (rows.py). The bends below are shared with m_fence_relaunches_and_races.py."""

from __future__ import annotations

from collections.abc import Callable

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.tracking import OpenInfo
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import artifact_info
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import open_latest
from conformance.mutants.tracking import replay_upload

OPEN, WRITE, COMMIT = ("artifacts/open",), ("versions/write",), ("versions/commit",)


def _is_open(request: Request) -> bool:
    return request.endpoint == "artifacts/open" and request.method == "POST"


def opens_of(turn: Turn, reply: Response) -> list[OpenInfo]:
    """The opens the proxy saw of the artifact ``reply`` (an open's) names, oldest first."""
    with turn.lock:
        return list(turn.t.opens.get(reply.json()["artifact"], []))


def epoch_of(pick: Callable[[Turn, Response, list[OpenInfo]], OpenInfo | None]) -> Bend:
    """An open's reply with the epoch of the earlier open ``pick`` chooses (None: kept)."""

    def bend(reply: Response, turn: Turn) -> Response:
        earlier = pick(turn, reply, opens_of(turn, reply))
        return reply if earlier is None else reply.with_json(dict(reply.json(),
                                                                  epoch=earlier.epoch))

    return bend


def _fresh_reopen(turn: Turn, reply: Response, opens: list[OpenInfo]) -> OpenInfo | None:
    fresh = body_of(turn.request).get("resume") is None and reply.json().get("resume_from") is None
    return opens[-2] if fresh and len(opens) >= 2 else None


def _same_holder(turn: Turn, reply: Response, opens: list[OpenInfo]) -> OpenInfo | None:
    same = len(opens) >= 2 and opens[-2].holder == reply.json()["holder"]
    return opens[-2] if same and body_of(turn.request).get("resume") == "latest" else None


StaleTest = Callable[[Turn, OpenInfo, OpenInfo], bool]


def stale_write_retried(applies: StaleTest) -> Bend:
    """A write refused as fenced is sent again with the artifact's newest token when
    ``applies`` (the turn, the stale open, the newest); that reply if it succeeds."""

    def bend(reply: Response, turn: Turn) -> Response:
        sent = body_of(turn.request)
        with turn.lock:
            stale = turn.t.tokens.get(sent.get("token"))
            newest = turn.t.newest.get(sent.get("artifact"))
        if stale is None or newest is None or not applies(turn, stale, newest):
            return reply
        retry = turn.request.with_json(dict(sent, token=newest.token))
        again = turn.upstream.send(retry)
        with turn.lock:
            assert turn.observe is not None
            turn.observe(retry, again)
        return again if again.ok else reply

    return bend


UploadTest = Callable[[Turn, UploadInfo, int], bool]


def stale_commit_replayed(applies: UploadTest, hide: bool = False) -> Bend:
    """A commit refused as fenced, of a complete upload of an older open, is written again
    under the newest token and committed when ``applies`` (the turn, the upload, the newest
    open's sequence number); the client gets that Version, or the 409 if ``hide``."""

    def bend(reply: Response, turn: Turn) -> Response:
        sent = body_of(turn.request)
        with turn.lock:
            up = turn.t.uploads.get(sent.get("upload"))
            newest = turn.t.newest.get(sent.get("artifact"))
            stale = turn.t.tokens.get(sent.get("token"))
        if up is None or newest is None or stale is None or not up.complete:
            return reply
        if up.token != sent.get("token") or stale.epoch >= newest.epoch:
            return reply
        if not applies(turn, up, newest.seq):
            return reply
        landed = replay_upload(turn.upstream, up, newest.token, newest.key)
        return reply if hide or not landed.ok else landed

    return bend


def _after_open(turn: Turn, up: UploadInfo, newest_seq: int) -> bool:
    return (up.complete_seq or 0) > newest_seq


def _before_open(turn: Turn, up: UploadInfo, newest_seq: int) -> bool:
    return (up.complete_seq or 0) < newest_seq


def _at_3_versions(turn: Turn, stale: OpenInfo, newest: OpenInfo) -> bool:
    info = artifact_info(turn.upstream, key_of(turn.request), stale.artifact) or {}
    return int(info.get("versions") or 0) >= 3


def upload_adopted(applies: Callable[[Turn, UploadInfo, OpenInfo], bool]) -> Bend:
    """A commit of another token's complete upload, refused, is done with the commit's
    token when ``applies`` (the turn, the upload, the commit's open); that Version if it
    lands."""

    def bend(reply: Response, turn: Turn) -> Response:
        sent = body_of(turn.request)
        with turn.lock:
            up = turn.t.uploads.get(sent.get("upload"))
            mine = turn.t.tokens.get(sent.get("token"))
        if up is None or mine is None or up.token == mine.token or not up.complete \
                or not applies(turn, up, mine):
            return reply
        landed = replay_upload(turn.upstream, up, mine.token, key_of(turn.request))
        return landed if landed.ok else reply

    return bend


def _by_the_newest(turn: Turn, up: UploadInfo, mine: OpenInfo) -> bool:
    with turn.lock:
        newest = turn.t.newest.get(body_of(turn.request).get("artifact"))
    return newest is not None and mine.token == newest.token


def _other_token_400(reply: Response, turn: Turn) -> Response:
    sent = body_of(turn.request)
    with turn.lock:
        up = turn.t.uploads.get(sent.get("upload"))
    if up is not None and up.token != sent.get("token"):
        return Response.error(400, "invalid_argument", "the upload belongs to another token")
    return reply


def fenced_as(pick: Callable[[Turn, Response], object]) -> Bend:
    """An open's reply whose ``fenced`` is what ``pick`` says (``...``: left as it is)."""

    def bend(reply: Response, turn: Turn) -> Response:
        fenced = pick(turn, reply)
        return reply if fenced is ... else reply.with_json(dict(reply.json(), fenced=fenced))

    return bend


def _null_for_same_holder(turn: Turn, reply: Response) -> object:
    fenced = reply.json().get("fenced")
    same = isinstance(fenced, dict) and fenced.get("holder") == reply.json().get("holder")
    return None if same else ...


def _first_open(turn: Turn, reply: Response) -> object:
    opens = opens_of(turn, reply)
    return {"epoch": opens[0].epoch, "holder": opens[0].holder} if len(opens) >= 3 else ...


def reopened_for_newest(reply: Response, turn: Turn) -> Response:
    """After a failed open of an existing artifact, the artifact is opened again with the
    newest holder's own id (so artifacts/read shows the same holder)."""
    with turn.lock:
        newest = turn.t.newest.get(artifact_of(turn.request) or "")
    if newest is not None:
        open_latest(turn.upstream, newest.key, newest.artifact, newest.holder)
    return reply


def _unknown_token(reply: Response, turn: Turn) -> Response:
    with turn.lock:
        known = body_of(turn.request).get("token") in turn.t.tokens
    return reply if known else Response.error(404, "not_found", "no such token")


def fenced_error(endpoints: tuple[str, ...]) -> On:
    return On(endpoints, replies="error", code="fenced")


def open_refused(status: int) -> On:
    return On(OPEN, replies=status, when=_is_open)



def _this_artifacts_token(turn: Turn) -> Request | None:
    """A write with another artifact's token of the same project, sent with the token of
    the newest open of the artifact it names."""
    body = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(body.get("token"))
        mine = turn.t.newest.get(body.get("artifact"))
    art = str(body.get("artifact"))
    if info is None or mine is None or info.artifact == art:
        return None
    if info.artifact.split("/")[0] != art.split("/")[0]:
        return None
    return turn.request.with_json(dict(body, token=mine.token))


rows(
    Row("fence_epoch_kept_fresh_reopen_empty", "FENCE-1.a",
        "a fresh open of an existing empty artifact reports the previous epoch again",
        On(OPEN, when=_is_open), answer=epoch_of(_fresh_reopen), tracked=True),
    Row("fence_epoch_kept_relaunch_same_holder", "FENCE-1.a",
        "a latest open by the holder that opened last reports that open's epoch again",
        On(OPEN, when=_is_open), answer=epoch_of(_same_holder), tracked=True),
    Row("fence_stale_write_ok_same_holder", "FENCE-2.a",
        "a write with a stale token is accepted when the newest open has the same holder",
        fenced_error(WRITE),
        answer=stale_write_retried(lambda turn, stale, newest: stale.holder == newest.holder),
        tracked=True),
    Row("fence_stale_write_ok_at_3_versions", "FENCE-2.a",
        "a write with a stale token is accepted once the artifact has 3 or more versions",
        fenced_error(WRITE), answer=stale_write_retried(_at_3_versions), tracked=True),
    Row("fence_stale_commit_ok_upload_after_open", "FENCE-2.b",
        "a stale commit succeeds when its files were still arriving after the newer open",
        fenced_error(COMMIT), answer=stale_commit_replayed(_after_open), tracked=True),
    Row("fence_stale_commit_409_but_lands", "FENCE-2.b",
        "a stale commit answers 409 fenced but its version lands anyway (upload after open)",
        fenced_error(COMMIT), answer=stale_commit_replayed(_after_open, hide=True),
        tracked=True),
    Row("fence_preopen_upload_commits_after_open", "FENCE-3.a",
        "an upload complete before a newer open still commits after it",
        fenced_error(COMMIT), answer=stale_commit_replayed(_before_open), tracked=True),
    Row("fence_preopen_upload_409_but_lands", "FENCE-3.a",
        "a stale commit of an upload complete before the open is 409 yet becomes visible",
        fenced_error(COMMIT), answer=stale_commit_replayed(_before_open, hide=True),
        tracked=True),
    Row("fence_upload_adopted_by_newer_token", "FENCE-2.c",
        "committing another token's upload with a newer token commits it",
        fenced_error(COMMIT), answer=upload_adopted(_by_the_newest), tracked=True),
    Row("fence_upload_other_token_400", "FENCE-2.c",
        "committing an older token's upload with a newer token is 400, not 409 fenced",
        fenced_error(COMMIT), answer=_other_token_400, tracked=True),
    Row("fence_fenced_null_same_holder", "FENCE-2.d",
        "a relaunch with the same holder id reports fenced: null",
        On(OPEN, when=_is_open), answer=fenced_as(_null_for_same_holder), tracked=True),
    Row("fence_fenced_names_first_open", "FENCE-2.d",
        "from the third open on, fenced names the artifact's first open, not the last",
        On(OPEN, when=_is_open), answer=fenced_as(_first_open), tracked=True),
    Row("fence_unknown_token_commit_404", "FENCE-2.e",
        "a commit with an unknown token is 404 not_found instead of 400",
        On(COMMIT, replies="error", code="invalid_argument"), answer=_unknown_token,
        tracked=True),
    Row("fence_invalid_open_bumps_epoch", "FENCE-4.a",
        "an open refused with 400 (bad place, holder or resume) still raises the epoch",
        open_refused(400), answer=reopened_for_newest, tracked=True),
    Row("fence_unknown_source_open_bumps_epoch", "FENCE-4.a",
        "a fork open refused with 404 (unknown source) still raises the target's epoch",
        open_refused(404), answer=reopened_for_newest, tracked=True),
    Row("fence_foreign_token_same_project_ok", "FENCE-2.e",
        "a write with another artifact's token of the same project uses this artifact's",
        On(WRITE, replies="any"), serve=_this_artifacts_token, tracked=True),
)
