"""Mutants of FORK-*: refused forks, the resumed source version, forked_from, the source."""

from __future__ import annotations

import re
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import (
    Tracked,
    api_get,
    artifact_info,
    artifact_of,
    body_of,
    key_of,
    open_latest,
    versions_of,
)

SOURCE = re.compile(r"^o41://([^/]+/[^/]+)/(step-\d{8})$")


def _fork_source(request: Request) -> str | None:
    """The resume string of a fork open (anything else than latest or null)."""
    body = body_of(request)
    resume = body.get("resume")
    if request.endpoint == "artifacts/open" and isinstance(resume, str) and resume != "latest":
        return resume
    return None


def _code(response: Response) -> str | None:
    data = response.json()
    try:
        return str(data["error"]["code"])
    except (KeyError, TypeError):
        return None


# --- FORK-1.a: a fork into an artifact with versions ------------------------------------


@mutant
class NotEmptyAsHasCheckpoints(Tracked):
    name = "fork_into_nonempty_has_checkpoints_code"
    clause = "FORK-1.a"
    summary = "a fork into an artifact with versions is 409 has_checkpoints, not not_empty"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if _fork_source(request) and _code(response) == "not_empty":
            return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
        return response


@mutant
class NotEmptyReopensTarget(Tracked):
    name = "fork_into_nonempty_reopens_target"
    clause = "FORK-1.a"
    summary = "a refused fork re-opens the target for its own holder (its epoch rises)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_fork_source(request) and _code(response) == "not_empty"):
            return response
        art = str(artifact_of(request))
        info = artifact_info(upstream, key_of(request), art)
        if info is not None and info.get("holder"):
            open_latest(upstream, key_of(request), art, str(info["holder"]))
        return response


# --- FORK-1.b: a missing source -------------------------------------------------------------


@mutant
class MissingVersion400(Tracked):
    name = "fork_missing_version_400"
    clause = "FORK-1.b"
    summary = "a fork from an existing artifact's missing version is 400 instead of 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        src = _fork_source(request)
        m = SOURCE.match(src or "")
        if m and _code(response) == "not_found":
            if artifact_info(upstream, key_of(request), m.group(1)) is not None:
                return Response.error(400, "invalid_argument", f"no version {m.group(2)}")
        return response


@mutant
class MissingSourceStartsEmpty(Tracked):
    name = "fork_missing_source_artifact_starts_empty"
    clause = "FORK-1.b"
    summary = "a fork from an artifact that does not exist opens the target empty instead of 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        m = SOURCE.match(_fork_source(request) or "")
        if not (m and _code(response) == "not_found"):
            return response
        if artifact_info(upstream, key_of(request), m.group(1)) is not None:
            return response
        body = body_of(request)
        again = upstream.send(request.with_json(dict(body, resume="latest")))
        return again if again.ok else response


# --- FORK-1.c: a malformed source ---------------------------------------------------------


@mutant
class ShortStepPadded(Tracked):
    name = "fork_short_step_padded"
    clause = "FORK-1.c"
    summary = "a fork source with fewer than 8 step digits is padded and accepted"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        m = re.match(r"^o41://([^/]+/[^/]+)/step-(\d{1,7})$", _fork_source(request) or "")
        if m:
            fixed = f"o41://{m.group(1)}/step-{int(m.group(2)):08d}"
            return request.with_json(dict(request.json(), resume=fixed))
        return None


@mutant
class NoVersionMeansLatest(Tracked):
    name = "fork_source_without_version_forks_latest"
    clause = "FORK-1.c"
    summary = "a fork source o41://P/N without a version forks the source's latest"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        m = re.match(r"^o41://([^/]+/[^/]+)/?$", _fork_source(request) or "")
        if not m:
            return None
        versions = versions_of(upstream, key_of(request), m.group(1))
        if not versions:
            return None
        fixed = f"o41://{m.group(1)}/{versions[-1]['version']}"
        return request.with_json(dict(request.json(), resume=fixed))


# --- FORK-1.d: read on the source, write on the target ---------------------------------


@mutant
class SourceReadUnchecked(Tracked):
    name = "fork_source_read_not_checked"
    clause = "FORK-1.d"
    summary = "a fork by a key that cannot read the source succeeds if it can write the target"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        m = SOURCE.match(_fork_source(request) or "")
        if not (m and response.status == 403):
            return response
        key = key_of(request)
        if artifact_info(upstream, key, m.group(1)) is not None:
            return response  # the source is readable: the target was the refusal
        with self.lock:
            owner = self.t.newest.get(m.group(1))
        if owner is None or not owner.key:
            return response
        probe = api_get(upstream, "versions/list", key, artifact=str(artifact_of(request)))
        if probe.status == 403:
            return response  # no read (hence no write) on the target either
        again = upstream.send(request.with_header("Authorization", f"Bearer {owner.key}"))
        return again if again.ok else response


@mutant
class SourceUnreadable404(Tracked):
    name = "fork_unreadable_source_404"
    clause = "FORK-1.d"
    summary = "a fork from a source the key cannot read is 404 not_found instead of 403"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        m = SOURCE.match(_fork_source(request) or "")
        if m and response.status == 403:
            if artifact_info(upstream, key_of(request), m.group(1)) is None:
                return Response.error(404, "not_found", "no such fork source")
        return response


# --- FORK-2.a: the source version as resume_from ---------------------------------------------


def _forked(request: Request, response: Response) -> tuple[dict[str, Any], str] | None:
    m = SOURCE.match(_fork_source(request) or "")
    reply = response.json() if response.ok else None
    if m and isinstance(reply, dict) and isinstance(reply.get("resume_from"), dict):
        return reply, m.group(1)
    return None


@mutant
class ForkResumesSourceLatest(Tracked):
    name = "fork_resume_from_is_source_latest"
    clause = "FORK-2.a"
    summary = "a fork from an older version resumes from the source's latest instead"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        found = _forked(request, response)
        if found is None:
            return response
        reply, source = found
        latest = api_get(upstream, "versions/read", key_of(request), artifact=source, urls="1")
        if latest.ok and latest.json().get("version") != reply["resume_from"].get("version"):
            return response.with_json(dict(reply, resume_from=latest.json()))
        return response


@mutant
class ForkResumeNoUrls(Tracked):
    name = "fork_resume_from_without_urls"
    clause = "FORK-2.a"
    summary = "a fork's resume_from lists its files without URLs"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        found = _forked(request, response)
        if found is None:
            return response
        reply, _ = found
        rf = reply["resume_from"]
        files = [{k: v for k, v in f.items() if k != "url"} for f in rf.get("files") or []]
        return response.with_json(dict(reply, resume_from=dict(rf, files=files)))


# --- FORK-2.b: forked_from ----------------------------------------------------------------------


@mutant
class ForkedFromLostOnRelaunch(Tracked):
    name = "fork_forked_from_lost_after_relaunch"
    clause = "FORK-2.b"
    summary = "artifacts/read shows forked_from null once the fork was opened again"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/read" or not response.ok:
            return response
        reply = response.json()
        with self.lock:
            opens = len(self.t.opens.get(str(reply.get("artifact")), []))
        if reply.get("forked_from") and opens >= 2:
            return response.with_json(dict(reply, forked_from=None))
        return response


@mutant
class ForkedFromVersionLatest(Tracked):
    name = "fork_forked_from_names_source_latest"
    clause = "FORK-2.b"
    summary = "forked_from names the source's current latest version, not the forked one"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/read" or not response.ok:
            return response
        reply = response.json()
        ff = reply.get("forked_from")
        if not isinstance(ff, dict):
            return response
        info = artifact_info(upstream, key_of(request), str(ff.get("artifact")))
        if info and info.get("latest") and info["latest"] != ff.get("version"):
            return response.with_json(dict(reply, forked_from=dict(ff, version=info["latest"])))
        return response


# --- FORK-2.c: the source is untouched -----------------------------------------------------


class _ForkTouchesSource(Tracked):
    """After the ``nth`` successful fork from a source, the source is re-opened for its own
    holder: its epoch rises and its writer is fenced, while the holder name stays."""

    nth = 1

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        found = _forked(request, response)
        if found is None:
            return response
        _, source = found
        with self.lock:
            counts = self.state.setdefault("forks", {})
            counts[source] = counts.get(source, 0) + 1
            if counts[source] != self.nth:
                return response
            owner = self.t.newest.get(source)
        if owner is not None:
            open_latest(upstream, owner.key, source, owner.holder)
        return response


@mutant
class ForkFencesSource(_ForkTouchesSource):
    name = "fork_fences_source_holder"
    clause = "FORK-2.c"
    summary = "a fork re-opens its source for the source's holder, fencing its running writer"


@mutant
class SecondForkFencesSource(_ForkTouchesSource):
    name = "fork_second_fork_fences_source"
    clause = "FORK-2.c"
    summary = "the second fork from one source fences the source's writer"
    nth = 2
