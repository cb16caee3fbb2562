"""Mutants of the artifact-name grammar (API-1.h): parts that start with punctuation or run
past 128 characters taken as names, parts at the edges (one character, 128 characters,
punctuation runs) refused, and names outside the grammar checked only by the open."""

from __future__ import annotations

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import Tracked, artifact_of, body_of

#: Every call that names an artifact, in its body or its query.
NAMING = ("artifacts/open", "versions/write", "versions/commit", "versions/delete",
          "versions/read", "versions/list", "artifacts/read", "usage/read")


def _parts(request: Request) -> list[str] | None:
    name = artifact_of(request) if request.endpoint in NAMING else None
    return name.split("/") if isinstance(name, str) and name.count("/") == 1 else None


def _renamed(request: Request, parts: list[str]) -> Request:
    """The request naming ``parts`` joined instead (in its body, else its query)."""
    name = "/".join(parts)
    body = body_of(request)
    if isinstance(body.get("artifact"), str):
        return request.with_json({**body, "artifact": name})
    return request.with_query(artifact=name)


def _refused(request: Request) -> Response:
    return Response.error(400, "invalid_argument", f"artifact {artifact_of(request)!r} is not "
                          "a valid name")


@mutant
class LeadingPunctuationAccepted(Tracked):
    """A part that starts with ``.``, ``_`` or ``-`` is taken as a name (spelled with an
    ``x`` in front, which the implementation accepts)."""

    name = "api-name-part-starting-with-dot-underscore-or-dash-accepted"
    clause = "API-1.h"
    summary = "names whose part starts with '.', '_' or '-' (such as 'p/_run') are accepted"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        parts = _parts(request)
        if not parts or not any(p[:1] in "._-" and p not in (".", "..") for p in parts if p):
            return None
        return _renamed(request, ["x" + p if p[:1] in "._-" else p for p in parts])


@mutant
class LongPartAccepted(Tracked):
    name = "api-name-part-of-129-characters-accepted"
    clause = "API-1.h"
    summary = "a name part of 129 or more characters is taken (cut to its first 128)"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        parts = _parts(request)
        if not parts or all(len(p) <= 128 for p in parts):
            return None
        return _renamed(request, [p[:128] for p in parts])


@mutant
class LongestPartRefused(Tracked):
    name = "api-name-part-of-128-characters-refused"
    clause = "API-1.h"
    summary = "a name part of exactly 128 characters gets 400 (the bound checked with <)"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        parts = _parts(request)
        return _refused(request) if parts and any(len(p) == 128 for p in parts) else None


@mutant
class OneCharacterPartRefused(Tracked):
    name = "api-name-part-of-one-character-refused"
    clause = "API-1.h"
    summary = "a name part of one character (such as 'p/a') gets 400"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        parts = _parts(request)
        return _refused(request) if parts and any(len(p) == 1 for p in parts) else None


@mutant
class PunctuationRunRefused(Tracked):
    name = "api-name-part-with-two-punctuation-marks-in-a-row-refused"
    clause = "API-1.h"
    summary = "a name part with '.-', '_-', '..' or another run of punctuation gets 400"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        parts = _parts(request)
        if parts and any(a in "._-" and b in "._-" for p in parts
                         for a, b in zip(p, p[1:], strict=False)):
            return _refused(request)
        return None


@mutant
class PunctuationLastRefused(Tracked):
    name = "api-name-part-ending-with-punctuation-refused"
    clause = "API-1.h"
    summary = "a name part that ends with '.', '_' or '-' (such as 'p/run-') gets 400"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        parts = _parts(request)
        if parts and any(p[-1:] in ("._-") and p not in (".", "..") for p in parts if p):
            return _refused(request)
        return None


@mutant
class GrammarOnlyAtOpen(Tracked):
    """Only the open checks the grammar; every other call takes a name outside it for an
    unknown artifact (404), or, with a token, for a token of another artifact."""

    name = "api-name-outside-the-grammar-unknown-to-all-but-the-open"
    clause = "API-1.h"
    summary = "a read, list, write, commit, delete or usage naming '_run' gets 404, not 400"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        parts = _parts(request)
        if request.endpoint == "artifacts/open" or not parts \
                or not any(p[:1] in "._-" for p in parts):
            return None
        return Response.error(404, "not_found", f"no artifact {artifact_of(request)!r}")
