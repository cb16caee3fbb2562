"""Mutants of AUTH-* where a token, a second key or a spelling stands in for the key: a
write path that trusts a live token more than the key, a scope compared without case,
usage of everything that leaves out read grants or answers an unknown or bare key, a
refused open that leaves its holder's name behind, a reader's open or write let through.
One row each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import emptied
from conformance.mutants.m_version_names import decoded
from conformance.mutants.open_bends import as_writer_of_new
from conformance.mutants.open_bends import refusal_names_holder
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import refused_when
from conformance.mutants.rows import retried
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import with_key
from conformance.mutants.usage_replies import retotal

WRITES = ("versions/write", "versions/commit")
USAGE = ("usage/read",)


def _with_the_tokens_key(turn: Turn) -> Request | None:
    """The request with the key that opened its token's artifact (this very artifact)."""
    with turn.lock:
        info = turn.t.tokens.get(str(body_of(turn.request).get("token")))
    if info is None or info.artifact != artifact_of(turn.request) or not info.key \
            or info.key == key_of(turn.request):
        return None
    return with_key(turn.request, info.key)


TOKEN_VOUCHES = retried(_with_the_tokens_key, lambda again: again.status not in (401, 403))


def _with_a_lower_case_grant(turn: Turn) -> Request | None:
    """A key that wrote under the lower-cased project reaches the capitalised one."""
    art, key = artifact_of(turn.request), key_of(turn.request)
    if not art or not key or art == art.lower():
        return None
    project = art.split("/")[0].lower() + "/"
    with turn.lock:
        reaches = any(o.key == key and a.lower().startswith(project)
                      for a, opens in turn.t.opens.items() for o in opens)
        good = turn.t.good_key(art)
    return None if not reaches or good is None or good == key else with_key(turn.request, good)


def _only_write_grants(reply: Response, turn: Turn) -> Response:
    report = reply.json()
    key = key_of(turn.request)
    if not isinstance(report.get("transfers"), list):
        return reply
    with turn.lock:
        mine = {a for a, opens in turn.t.opens.items() if any(o.key == key for o in opens)}
        others = {a for a in turn.t.opens if a not in mine}
    kept = [r for r in report["transfers"] if r.get("artifact") not in others]
    places = [p for p in report.get("placements") or [] if p.get("artifact") not in others]
    if len(kept) == len(report["transfers"]) \
            and len(places) == len(report.get("placements") or []):
        return reply
    return reply.with_json(retotal({**report, "transfers": kept, "placements": places}))


def _any_good_key(turn: Turn) -> Request | None:
    with turn.lock:
        key = turn.t.good_key()
    return with_key(turn.request, key) if key else None


def _empty_report(reply: Response, turn: Turn) -> Response:
    with turn.lock:
        key = turn.t.good_key()
    return emptied(api_get(turn.upstream, "usage/read", key)) or reply


def _scoped_writer(turn: Turn) -> bool:
    key = key_of(turn.request)
    with turn.lock:
        return key in turn.t.refused_keys and key in turn.t.writer_keys


def _written_with_the_tokens_key(reply: Response, turn: Turn) -> Response:
    """A write refused for its key sent again with the key of its token's open."""
    with turn.lock:
        info = turn.t.tokens.get(body_of(turn.request).get("token"))
    if info is None or not info.key or info.key == key_of(turn.request):
        return reply
    again = turn.upstream.send(with_key(turn.request, info.key))
    with turn.lock:
        assert turn.observe is not None
        turn.observe(turn.request, again)
    return decoded(again) if again.ok else reply


def _authorization(test: Callable[[str], bool]) -> Callable[[Request], bool]:
    return lambda request: test(request.header("Authorization") or "")


def _of_everything(request: Request) -> bool:
    return request.arg("artifact") is None


rows(
    Row("auth-unknown-key-with-a-live-token-writes", "AUTH-1.b",
        "versions/write and commit with an unknown key and a valid token are accepted",
        On(WRITES, replies=401, when=lambda r: key_of(r) is not None), answer=TOKEN_VOUCHES,
        tracked=True),
    Row("auth-unknown-key-usage-of-all-gets-empty-report", "AUTH-1.b",
        "usage/read with no artifact and an unknown key answers 200 with nothing in it",
        On(USAGE, replies=401, when=lambda r: _of_everything(r) and _authorization(
            lambda auth: auth.startswith("Bearer ak_"))(r)),
        answer=_empty_report, tracked=True),
    Row("auth-bare-bearer-answered-on-usage", "AUTH-1.a",
        "usage/read with 'Authorization: Bearer' and no key is answered",
        On(USAGE, replies=401, when=_authorization(lambda auth: auth.strip() == "Bearer")),
        answer=retried(_any_good_key), tracked=True),
    Row("auth-refused-open-records-its-holder", "AUTH-2.b",
        "an open refused 403 leaves artifacts/read naming the refused holder",
        On(("artifacts/open", "artifacts/read"), replies="any"),
        answer=refusal_names_holder("forbidden"), tracked=True),
    Row("auth-reader-fresh-open-of-new-artifact-answered", "AUTH-2.a",
        "a fresh open of a new artifact by a key that cannot write it succeeds",
        On(("artifacts/open",), replies=403,
           when=lambda r: r.method == "POST" and not body_of(r).get("resume")),
        answer=retried(as_writer_of_new), tracked=True),
    Row("auth-read-key-joins-an-upload-with-the-writers-token", "AUTH-3.a",
        "a write naming an open upload by a read-only key adds its files",
        On(("versions/write",), replies=403, when=lambda r: bool(body_of(r).get("upload"))),
        answer=TOKEN_VOUCHES, tracked=True),
    Row("auth-read-key-write-with-valid-token-accepted", "AUTH-3.a",
        "a write by a read-only key carrying a writer's valid token is accepted",
        On(("versions/write",), replies=403), answer=_written_with_the_tokens_key,
        tracked=True),
    Row("auth-usage-of-all-leaves-out-read-only-grants", "AUTH-3.a",
        "usage/read without artifact omits the artifacts the key can only read",
        On(USAGE, when=_of_everything), answer=_only_write_grants, tracked=True),
    Row("auth-delete-outside-prefix-with-the-holders-token-accepted", "AUTH-3.b",
        "versions/delete by a key outside its prefixes, with a live token, deletes",
        On(("versions/delete",), replies=403), answer=TOKEN_VOUCHES, tracked=True),
    Row("auth-write-outside-prefix-with-another-keys-token-accepted", "AUTH-3.b",
        "a write or commit by a key outside its prefixes, with a live token, is taken",
        On(WRITES, replies=403), answer=TOKEN_VOUCHES, tracked=True),
    Row("auth-scope-prefix-compared-without-case", "AUTH-3.b",
        "a key granted 'p-w/' reaches 'P-W/run' (prefixes compared lower-cased)",
        On(replies=403), answer=retried(_with_a_lower_case_grant, lambda again: again.status
                                        != 403), tracked=True),
    Row("auth-scoped-writer-usage-of-own-artifact-403", "AUTH-3.c",
        "a prefix-scoped write key gets 403 on usage/read of its own artifact",
        On(USAGE, when=lambda r: bool(r.arg("artifact"))),
        answer=refused_when(_scoped_writer, 403, "forbidden",
                            "the key cannot read this artifact"), tracked=True),
)
