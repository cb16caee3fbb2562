"""Subtler mutants of OPEN-* and FORK-*: opens right in the common case and wrong only for
a box without a place, files declared out of name order, nested file names, a forked
artifact, a fork of a non-latest version, a step above the source's latest, or a source
spelled with a trailing slash."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.tracking import (
    Tracked,
    api_get,
    artifact_of,
    body_of,
    key_of,
    open_latest,
    versions_of,
)


def _open(request: Request) -> bool:
    return request.endpoint == "artifacts/open" and request.method == "POST"


def _source(request: Request) -> tuple[str, str] | None:
    """(artifact, version) of a well-formed fork open."""
    resume = body_of(request).get("resume")
    m = SOURCE.match(resume) if _open(request) and isinstance(resume, str) else None
    return (m[1], m[2]) if m else None


class _Forks(Tracked):
    """Remembers, per artifact, the source it was forked from (after a successful fork)."""

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        src = _source(request)
        if src and response.ok:
            self.state.setdefault("forks", {})[artifact_of(request)] = src

    def fork_of(self, artifact: Any) -> tuple[str, str] | None:
        with self.lock:
            return self.state.get("forks", {}).get(artifact)


def _version(upstream: Upstream, key: str | None, artifact: str, version: str) -> Any:
    reply = api_get(upstream, "versions/read", key, artifact=artifact, version=version, urls="1")
    return reply.json() if reply.ok else None


def _as_latest(request: Request, upstream: Upstream) -> Response:
    """The open sent again as a latest open (same artifact, place and holder)."""
    return upstream.send(request.with_json(dict(body_of(request), resume="latest")))


# --- OPEN-1.a ----------------------------------------------------------------------------


@mutant
class LatestWithoutPlaceNotCreated(Tracked):
    """A latest open with ``place: null`` of a new artifact answers 200 but records nothing
    until a version is committed: artifacts/read says 404 while it is empty."""

    name = "open_latest_without_place_creates_nothing"
    clause = "OPEN-1.a"
    summary = "a latest open with place null of a new artifact leaves artifacts/read at 404"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.endpoint != "artifacts/read":
            return None
        with self.lock:
            ghost = request.arg("artifact") in self.state.get("ghosts", set())
        if ghost and not versions_of(upstream, key_of(request), str(request.arg("artifact"))):
            return Response.error(404, "not_found", "no such artifact")
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if _open(request) and response.ok and body.get("resume") == "latest" \
                and body.get("place") is None:
            with self.lock:
                if len(self.t.opens.get(str(body.get("artifact")), [])) == 1:
                    self.state.setdefault("ghosts", set()).add(body.get("artifact"))
        return response


# --- OPEN-2.a / OPEN-2.b -----------------------------------------------------------------


@mutant
class ResumeShaInDeclaredOrder(Tracked):
    """``resume_from`` lists the files in name order but takes their sha256 in the order
    they were declared at write: right whenever they were declared in name order."""

    name = "open_resume_sha256_misaligned_for_unsorted_files"
    clause = "OPEN-2.a"
    summary = "resume_from of files declared out of name order pairs them with others' sha256"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = response.json() if _open(request) and response.ok else None
        resumed = reply.get("resume_from") if isinstance(reply, dict) else None
        files = (resumed or {}).get("files") or []
        with self.lock:
            ups = [u for u in self.t.uploads.values() if u.artifact == resumed.get("artifact")
                   and u.write.get("version") == resumed.get("version")] if files else []
        declared = [f.get("name") for f in (ups[-1].write.get("files") or [])] if ups else []
        by_name = {f.get("name"): f.get("sha256") for f in files}
        if len(files) < 2 or declared == sorted(declared) or set(declared) != set(by_name):
            return response
        ordered = sorted(files, key=lambda f: str(f.get("name")))
        for f, name in zip(ordered, declared, strict=True):
            f["sha256"] = by_name[name]
        return response.with_json(reply)


@mutant
class ForkRelaunchResumesSource(_Forks):
    """A latest open of a forked artifact with exactly one version of its own resumes from
    the fork source's version (the lookup counts the source as a version)."""

    name = "open_resume_of_fork_with_one_version_gives_source"
    clause = "OPEN-2.a"
    summary = "latest of a fork with one own version resumes the version it was forked from"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        src = self.fork_of(body.get("artifact"))
        if not (_open(request) and response.ok and body.get("resume") == "latest" and src):
            return response
        if len(versions_of(upstream, key_of(request), str(body.get("artifact")))) != 1:
            return response
        version = _version(upstream, key_of(request), *src)
        if not isinstance(version, dict):
            return response
        version["artifact"] = body.get("artifact")
        return response.with_json(dict(response.json(), resume_from=version))


@mutant
class ResumeNestedUrl404(Tracked):
    """The URLs of ``resume_from`` files whose name has a folder answer 404 (the open signs
    the name with its slash escaped; versions/read signs it right)."""

    name = "open_resume_url_of_nested_file_404"
    clause = "OPEN-2.b"
    summary = "resume_from URLs of files with a '/' in their name answer 404"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.kind == "data" and request.method in ("GET", "HEAD"):
            with self.lock:
                if request.path in self.state.get("nested", set()):
                    return Response.error(404, "not_found", "no such file")
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = response.json() if _open(request) and response.ok else None
        resumed = reply.get("resume_from") if isinstance(reply, dict) else None
        for f in (resumed or {}).get("files") or []:
            if "/" in str(f.get("name")) and f.get("url"):
                with self.lock:
                    self.state.setdefault("nested", set()).add(urlsplit(f["url"]).path)
        return response


# --- OPEN-3.a ----------------------------------------------------------------------------


class _FreshAllowed(_Forks):
    """A fresh open refused ``has_checkpoints`` is run as a latest open when ``applies``,
    and answered with ``resume_from: null``."""

    def applies(self, request: Request) -> bool:
        raise NotImplementedError

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if not (_open(request) and body.get("resume") is None
                and error_code(response) == "has_checkpoints" and self.applies(request)):
            return response
        again = _as_latest(request, upstream)
        return again.with_json(dict(again.json(), resume_from=None)) if again.ok else response


@mutant
class FreshAllowedOnFork(_FreshAllowed):
    name = "open_fresh_allowed_on_fork_with_own_versions"
    clause = "OPEN-3.a"
    summary = "a fresh open of a forked artifact that has versions succeeds, resume null"

    def applies(self, request: Request) -> bool:
        return self.fork_of(artifact_of(request)) is not None


@mutant
class FreshAllowedWithoutPlace(_FreshAllowed):
    name = "open_fresh_allowed_without_place"
    clause = "OPEN-3.a"
    summary = "a fresh open with place null on an artifact with versions succeeds"

    def applies(self, request: Request) -> bool:
        return body_of(request).get("place") is None


# --- FORK-1 ------------------------------------------------------------------------------


@mutant
class ForkIntoForkAllowed(_Forks):
    """A fork into an artifact that is itself a fork is allowed even when it has versions:
    the emptiness check looks at whether the artifact was forked, not at its versions."""

    name = "fork_into_forked_artifact_with_versions_allowed"
    clause = "FORK-1.a"
    summary = "a fork into a forked artifact that has versions succeeds"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        src = _source(request)
        if not src or error_code(response) != "not_empty" or not self.fork_of(artifact_of(request)):
            return response
        version = _version(upstream, key_of(request), *src)
        again = _as_latest(request, upstream) if isinstance(version, dict) else response
        if not again.ok:
            return response
        return again.with_json(dict(again.json(), resume_from=version))


@mutant
class ForkAboveLatestGivesLatest(Tracked):
    """A fork from a step above the source's latest forks the source's latest (the lookup
    is ``step <= N``, newest first)."""

    name = "fork_from_step_above_latest_forks_latest"
    clause = "FORK-1.b"
    summary = "a fork from a step past the source's latest forks that latest instead of 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        src = _source(request)
        if not src or response.status != 404:
            return response
        versions = versions_of(upstream, key_of(request), src[0])
        if not versions or versions[-1]["version"] >= src[1]:
            return response
        resume = f"o41://{src[0]}/{versions[-1]['version']}"
        again = upstream.send(request.with_json(dict(body_of(request), resume=resume)))
        return again if again.ok else response


@mutant
class ForkSourceSpellingsAccepted(Tracked):
    """A fork source with a trailing ``/`` or an upper-case scheme ``O41://`` is cleaned
    up and accepted instead of 400."""

    name = "fork_source_trailing_slash_or_upper_scheme_accepted"
    clause = "FORK-1.c"
    summary = "a fork source 'o41://P/N/step-X/' or 'O41://P/N/step-X' is accepted"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        resume = body_of(request).get("resume")
        if not _open(request) or not isinstance(resume, str) or resume == "latest":
            return None
        clean = resume.rstrip("/")
        clean = "o41://" + clean[6:] if clean[:6].lower() == "o41://" else clean
        if clean != resume and SOURCE.match(clean):
            return request.with_json(dict(body_of(request), resume=clean))
        return None


# --- FORK-2 ------------------------------------------------------------------------------


@mutant
class ForkLocationOfSourceLatest(Tracked):
    """A fork of a non-latest version reports as ``resume_from.location`` the location of
    the source's latest version (the fork joins on the artifact, not the version)."""

    name = "fork_resume_from_location_of_source_latest"
    clause = "FORK-2.a"
    summary = "a fork of an older version reports the location of the source's latest"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        src = _source(request)
        if not src or not response.ok:
            return response
        versions = versions_of(upstream, key_of(request), src[0])
        reply = response.json()
        resumed = reply.get("resume_from")
        if not versions or not isinstance(resumed, dict) or versions[-1]["version"] == src[1]:
            return response
        resumed["location"] = versions[-1].get("location")
        return response.with_json(reply)


@mutant
class ForkOfOlderFencesSource(Tracked):
    """A fork of a version that is not the source's latest re-opens the source for its
    holder (it "pins" the old version), fencing the running writer."""

    name = "fork_of_older_version_fences_source"
    clause = "FORK-2.c"
    summary = "a fork of a non-latest version raises the source's epoch, fencing its writer"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        src = _source(request)
        if not src or not response.ok:
            return response
        versions = versions_of(upstream, key_of(request), src[0])
        if versions and versions[-1]["version"] != src[1]:
            with self.lock:
                newest = self.t.newest.get(src[0])
            if newest is not None:
                open_latest(upstream, newest.key, src[0], newest.holder)
        return response
