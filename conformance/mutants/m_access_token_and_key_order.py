"""Mutants written as a blind adversary would, from docs/contract.md alone, for the key and
token rules: a write path that trusts the token more than the key, a scope compared without
case, a refused open that leaves its holder's name behind, and body checks done after the
artifact's state was looked at. Each is right for the common path and wrong on one other."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.tracking import (
    Tracked,
    api_get,
    artifact_of,
    body_of,
    key_of,
    versions_of,
    with_key,
)

_WRITES = ("versions/write", "versions/commit")


def _open(request: Request) -> bool:
    return request.endpoint == "artifacts/open" and request.method == "POST"


# --- AUTH --------------------------------------------------------------------------------


class _TokenVouches(Tracked):
    """On a refusal with ``status`` of a call in ``endpoints`` that carries a token the
    proxy saw issued for this very artifact, the call is resent with the key that opened
    it: the implementation let the token stand in for the key."""

    status = 401
    endpoints: tuple[str, ...] = _WRITES

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint not in self.endpoints or response.status != self.status:
            return response
        body = body_of(request)
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
        if info is None or info.artifact != artifact_of(request) or not info.key \
                or info.key == key_of(request):
            return response
        again = upstream.send(with_key(request, info.key))
        return again if again.status not in (401, 403) else response


@mutant
class UnknownKeyWithTokenWrites(_TokenVouches):
    """A write or commit with a well-formed unknown key but a live token is answered (the
    write path authenticates by the token)."""

    name = "auth-unknown-key-with-a-live-token-writes"
    clause = "AUTH-1.b"
    summary = "versions/write and commit with an unknown key and a valid token are accepted"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if key_of(request) is None:  # no or malformed header: still 401
            return response
        return super().after(request, response, upstream)


@mutant
class ScopedDeleteWithToken(_TokenVouches):
    """``versions/delete`` by a key outside the artifact's prefixes carrying the holder's
    token is answered (delete checks the token's holder, not the key's scope)."""

    name = "auth-delete-outside-prefix-with-the-holders-token-accepted"
    clause = "AUTH-3.b"
    summary = "versions/delete by a key outside its prefixes, with a live token, deletes"
    status = 403
    endpoints = ("versions/delete",)


@mutant
class ScopedWriteWithToken(_TokenVouches):
    """A write or commit by a key with no grant on the artifact (outside its prefixes)
    carrying another key's live token is answered."""

    name = "auth-write-outside-prefix-with-another-keys-token-accepted"
    clause = "AUTH-3.b"
    summary = "a write or commit by a key outside its prefixes, with a live token, is taken"
    status = 403


@mutant
class ReadKeyJoinsUpload(_TokenVouches):
    """A write that joins an upload (``"upload": U``) by a read-only key carrying the
    writer's token is answered: the join path checks the upload, not the key."""

    name = "auth-read-key-joins-an-upload-with-the-writers-token"
    clause = "AUTH-3.a"
    summary = "a write naming an open upload by a read-only key adds its files"
    status = 403
    endpoints = ("versions/write",)

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not body_of(request).get("upload"):
            return response
        return super().after(request, response, upstream)


@mutant
class ScopeCaseInsensitive(Tracked):
    """A key's prefixes are compared with the artifact name lower-cased: a key granted
    ``team/`` reaches ``Team/run`` (names are case-sensitive; capitals are a name of their
    own)."""

    name = "auth-scope-prefix-compared-without-case"
    clause = "AUTH-3.b"
    summary = "a key granted 'p-w/' reaches 'P-W/run' (prefixes compared lower-cased)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        art = artifact_of(request)
        key = key_of(request)
        if response.status != 403 or not art or not key or art == art.lower():
            return response
        project = art.split("/")[0].lower() + "/"
        with self.lock:
            # the key wrote under the lower-cased project: its grant covers it
            reaches = any(o.key == key and a.lower().startswith(project)
                          for a, opens in self.t.opens.items() for o in opens)
            good = self.t.good_key(art)
        if not reaches or good is None or good == key:
            return response
        again = upstream.send(with_key(request, good))
        return again if again.status != 403 else response


@mutant
class UsageAllWithoutReadGrants(Tracked):
    """``usage/read`` without ``artifact`` reports only the artifacts the key can write,
    leaving out those it may only read (the filter asks for write)."""

    name = "auth-usage-of-all-leaves-out-read-only-grants"
    clause = "AUTH-3.a"
    summary = "usage/read without artifact omits the artifacts the key can only read"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json()
        key = key_of(request)
        if request.endpoint != "usage/read" or request.arg("artifact") is not None \
                or not response.ok or not isinstance(body, dict) \
                or not isinstance(body.get("transfers"), list):
            return response
        with self.lock:
            mine = {a for a, opens in self.t.opens.items() if any(o.key == key for o in opens)}
            others = {a for a in self.t.opens if a not in mine}
        from conformance.mutants.usage_replies import retotal  # one module, no cycle

        rows = [r for r in body["transfers"] if r.get("artifact") not in others]
        places = [p for p in body.get("placements") or [] if p.get("artifact") not in others]
        if len(rows) == len(body["transfers"]) and len(places) == len(body.get("placements") or []):
            return response
        return response.with_json(retotal({**body, "transfers": rows, "placements": places}))


# --- refusals that leave the refused box's name behind -----------------------------------


class _RefusalNamesHolder(Tracked):
    """A refused open with ``codes`` still records its ``holder`` as the artifact's
    holder (the epoch and tokens stay): ``artifacts/read`` names it."""

    codes: tuple[str, ...] = ()

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if _open(request) and error_code(response) in self.codes:
            holder = body_of(request).get("holder")
            if isinstance(holder, str) and holder:
                with self.lock:
                    self.state.setdefault("named", {})[artifact_of(request)] = holder
            return response
        reply = response.json()
        if request.endpoint == "artifacts/open" and response.ok and isinstance(reply, dict):
            with self.lock:  # a successful open names its own holder again
                self.state.setdefault("named", {}).pop(reply.get("artifact"), None)
            return response
        if request.endpoint != "artifacts/read" or not response.ok or not isinstance(reply, dict):
            return response
        with self.lock:
            named = self.state.get("named", {}).get(reply.get("artifact"))
        return response if named is None else response.with_json(dict(reply, holder=named))


@mutant
class NotEmptyForkNamesHolder(_RefusalNamesHolder):
    name = "fork-not-empty-refusal-records-the-forks-holder"
    clause = "FORK-1.a"
    summary = "a fork refused 409 not_empty leaves artifacts/read naming the fork's holder"
    codes = ("not_empty",)


@mutant
class FreshRefusalNamesHolder(_RefusalNamesHolder):
    name = "open-fresh-refusal-records-its-holder"
    clause = "OPEN-3.b"
    summary = "a fresh open refused 409 has_checkpoints leaves artifacts/read naming its holder"
    codes = ("has_checkpoints",)


@mutant
class ForbiddenOpenNamesHolder(_RefusalNamesHolder):
    name = "auth-refused-open-records-its-holder"
    clause = "AUTH-2.b"
    summary = "an open refused 403 leaves artifacts/read naming the refused holder"
    codes = ("forbidden",)


# --- the body checked after the artifact's state -----------------------------------------


def _body_fault_only(request: Request) -> bool:
    """The open's artifact and resume are well formed (so a 400 came from another field)."""
    body = body_of(request)
    resume = body.get("resume")
    ok_resume = resume is None or resume == "latest" \
        or (isinstance(resume, str) and SOURCE.match(resume) is not None)
    return isinstance(body.get("artifact"), str) and "resume" in body and ok_resume


@mutant
class FreshConflictBeforeBody(Tracked):
    """A fresh open with a mistyped ``holder`` or ``place`` of an artifact with versions
    gets 409 ``has_checkpoints``: the versions are counted before the body is checked."""

    name = "open-fresh-with-bad-place-or-holder-on-checkpoints-gets-409"
    clause = "API-1.f"
    summary = "a fresh open with a malformed place/holder answers 409 if the artifact has versions"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _open(request) or response.status != 400 or not _body_fault_only(request) \
                or body_of(request).get("resume") is not None:
            return response
        if versions_of(upstream, key_of(request), str(artifact_of(request))):
            return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
        return response


@mutant
class MissingSourceBeforeBody(Tracked):
    """A fork with a mistyped ``holder`` or ``place`` from a source that does not exist gets
    404: the source is looked up before the body is checked."""

    name = "fork-with-bad-place-or-holder-from-missing-source-gets-404"
    clause = "API-1.f"
    summary = "a fork with a malformed place/holder answers 404 when its source is missing"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        resume = body_of(request).get("resume")
        if not _open(request) or response.status != 400 or not _body_fault_only(request) \
                or not isinstance(resume, str) or not SOURCE.match(resume):
            return response
        source, version = SOURCE.match(resume).groups()  # type: ignore[union-attr]
        found = api_get(upstream, "versions/read", key_of(request), artifact=source,
                        version=version)
        if found.status == 404:
            return Response.error(404, "not_found", f"no version {resume}")
        return response


@mutant
class NotEmptyBeforeMissingSource(Tracked):
    """A fork from a source that does not exist into an artifact with versions gets 409
    ``not_empty``: the target is checked first (the contract puts a 404 before a 409)."""

    name = "fork-from-missing-source-into-nonempty-gets-not-empty"
    clause = "FORK-1.b"
    summary = "a fork from a missing source into an artifact with versions answers 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        resume = body_of(request).get("resume")
        if not _open(request) or response.status != 404 or not isinstance(resume, str) \
                or not SOURCE.match(resume):
            return response
        if versions_of(upstream, key_of(request), str(artifact_of(request))):
            return Response.error(409, "not_empty", "the fork's target has versions")
        return response


@mutant
class ForkSourceLatestWord(Tracked):
    """A fork source ``o41://P/N/latest`` is taken as the source's latest version (the
    version part is parsed as ``versions/read`` parses it)."""

    name = "fork-source-with-version-latest-accepted"
    clause = "FORK-1.c"
    summary = "a fork from 'o41://P/N/latest' forks the source's latest instead of 400"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        resume = body_of(request).get("resume")
        if not _open(request) or not isinstance(resume, str) \
                or not resume.startswith("o41://") or not resume.endswith("/latest"):
            return None
        source = resume.removeprefix("o41://").removesuffix("/latest")
        listed = versions_of(upstream, key_of(request), source)
        if not listed:
            return None
        body: dict[str, Any] = dict(body_of(request), resume=f"o41://{source}/"
                                    f"{listed[-1].get('version')}")
        return request.with_json(body)


@mutant
class BodyBeforeScope(Tracked):
    """An open's ``place`` and ``holder`` are validated before the key's scope: a key that
    cannot write the artifact gets 400 for a mistyped place or holder, not 403."""

    name = "auth-open-by-unwriting-key-with-bad-place-or-holder-gets-400"
    clause = "AUTH-2.c"
    summary = "an open by a key without write, with a malformed place/holder, answers 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _open(request) or response.status != 403:
            return response
        body = body_of(request)
        place, holder = body.get("place"), body.get("holder", "")
        bad_place = place is not None and not (
            isinstance(place, dict) and isinstance(place.get("cloud"), str)
            and isinstance(place.get("region"), str))
        if bad_place or not isinstance(holder, str):
            return Response.error(400, "invalid_argument", "place needs 'cloud' and 'region'")
        return response


@mutant
class MissingResumeMeansLatest(Tracked):
    """An open whose body has no ``resume`` key resumes from ``latest`` (a convenient
    default), though the contract's open body requires ``resume``."""

    name = "open-without-resume-key-resumes-latest"
    clause = "API-1.f"
    summary = "an open body without resume resumes the latest checkpoint instead of 400"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        body = body_of(request)
        if _open(request) and body and "resume" not in body \
                and isinstance(body.get("artifact"), str):
            return request.with_json(dict(body, resume="latest"))
        return None
