"""Mutants of who may write: the key an Authorization header names (AUTH-1.a), what a
key's grant reaches (AUTH-3.b, c), a stale token's commit (FENCE-2.b), an open refused for
its key (FENCE-2.d), a scoped key's fork source (FORK-1.d); one row each (rows.py)."""

from __future__ import annotations

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import ok_or
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import with_key


def _first_two_words(request: Request) -> Request:
    words = (request.header("Authorization") or "").split()
    if len(words) > 2 and words[0] == "Bearer":
        return request.with_header("Authorization", f"Bearer {words[1]}")
    return request


def _newest_holders_upload(reply: Response, turn: Turn) -> Response:
    """A fenced commit of an upload the newest token started, sent again with it."""
    body = body_of(turn.request)
    with turn.lock:
        up = turn.t.uploads.get(str(body.get("upload")))
        newest = turn.t.newest.get(str(body.get("artifact")))
        stale = turn.t.tokens.get(str(body.get("token")))
    if up is None or newest is None or stale is None or up.token != newest.token \
            or stale.artifact != newest.artifact or stale.epoch >= newest.epoch:
        return reply
    return ok_or(turn.upstream, turn.request.with_json(dict(body, token=newest.token)), reply)


def _refused_holder_named(reply: Response, turn: Turn) -> Response:
    """An open refused 403 notes its holder; the artifact's next open's fenced names it."""
    sent = body_of(turn.request)
    art, holder = sent.get("artifact"), sent.get("holder")
    if reply.status == 403 and isinstance(holder, str):
        with turn.lock:
            turn.memory.setdefault("refused", {})[art] = holder
        return reply
    data = reply.json()
    if not reply.ok or not isinstance(data, dict):
        return reply
    with turn.lock:
        name = turn.memory.setdefault("refused", {}).pop(art, None)
    fenced = data.get("fenced")
    if name and isinstance(fenced, dict):
        return reply.with_json(dict(data, fenced=dict(fenced, holder=name)))
    return reply


def _fork(request: Request) -> bool:
    resume = body_of(request).get("resume")
    return isinstance(resume, str) and SOURCE.match(resume) is not None


def _source_not_written(turn: Turn) -> Response | None:
    """403 for a fork by a key refused before whose source it never opened."""
    match = SOURCE.match(str(body_of(turn.request).get("resume")))
    key = key_of(turn.request)
    with turn.lock:
        scoped = key in turn.t.refused_keys
        writes = match is not None and any(o.key == key
                                           for o in turn.t.opens.get(match.group(1), []))
    if scoped and not writes:
        return Response.error(403, "forbidden", "this key cannot write the fork's source")
    return None


def _other_project_with_grant_prefix(reply: Response, turn: Turn) -> Response:
    """A 403 for ``P2x/...`` answered with a key that wrote under ``P/``."""
    name, key = artifact_of(turn.request), key_of(turn.request)
    if not isinstance(name, str) or "/" not in name or not key:
        return reply
    project = name.split("/", 1)[0]
    with turn.lock:
        own = {a.split("/", 1)[0] for a, opens in turn.t.opens.items()
               if any(o.key == key for o in opens)}
        good = turn.t.good_key(name)
    if not any(project != p and project.startswith(p) for p in own) or good in (None, key):
        return reply
    return ok_or(turn.upstream, with_key(turn.request, str(good)), reply)


def _scoped_delete_refused(turn: Turn) -> Response | None:
    key = key_of(turn.request)
    with turn.lock:
        scoped = key in turn.t.refused_keys and key in turn.t.writer_keys
    return Response.error(403, "forbidden", "the key cannot delete") if scoped else None


rows(
    # The grant is compared with the artifact's name without the grant's slash.
    Row("auth-project-grant-matched-without-its-slash", "AUTH-3.b",
        "a key granted 'teamb/' reaches 'teamb2x/run' (the prefix compared without '/')",
        On(replies=403), answer=_other_project_with_grant_prefix, tracked=True),
    # Deletes checked against whole-key write, not the prefix.
    Row("auth-prefix-scoped-key-delete-refused", "AUTH-3.c",
        "a prefix-scoped write key gets 403 on versions/delete under its own prefix",
        On(("versions/delete",), replies="any"), serve=_scoped_delete_refused, tracked=True),
    # The header is split on spaces and its second word used.
    Row("auth-bearer-key-followed-by-more-words-accepted", "AUTH-1.a",
        "an Authorization header 'Bearer <key> <junk>' is accepted as the key",
        On(replies="any"), ask=_first_two_words),
    # The commit is checked against its upload's epoch only, never the token's own.
    Row("fence-stale-token-commits-the-newest-holders-upload", "FENCE-2.b",
        "a commit with a fenced token of an upload started by the newest token commits",
        On(("versions/commit",), replies="error", code="fenced"),
        answer=_newest_holders_upload, tracked=True),
    Row("fence-open-refused-403-named-by-the-next-fenced", "FENCE-2.d",
        "after an open refused 403, the next open's fenced names the refused holder",
        On(("artifacts/open",), replies="any"), answer=_refused_holder_named),
    # The source's scope is checked for write.
    Row("fork-from-a-read-only-source-by-a-scoped-key-refused", "FORK-1.d",
        "a scoped key cannot fork from a source it may only read (403)",
        On(("artifacts/open",), replies="any", when=_fork), serve=_source_not_written,
        tracked=True),
)
