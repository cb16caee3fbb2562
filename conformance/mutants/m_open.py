"""Mutants of OPEN-*: resume latest, the resumed version and its URLs, fresh opens."""

from __future__ import annotations

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


def _open(request: Request, resume: Any) -> bool:
    body = body_of(request)
    return request.endpoint == "artifacts/open" and body.get("resume", None) == resume


def _code(response: Response) -> str | None:
    data = response.json()
    try:
        return str(data["error"]["code"])
    except (KeyError, TypeError):
        return None


# --- OPEN-1.a: latest on a missing or empty artifact ------------------------------------


@mutant
class LatestDottedName404(Tracked):
    name = "open_latest_new_dotted_name_404"
    clause = "OPEN-1.a"
    summary = "latest on a new artifact whose name has a '.' or '_' is 404 instead of created"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        art = str(artifact_of(request) or "")
        name = art.split("/")[-1]
        if _open(request, "latest") and ("." in name or "_" in name):
            if artifact_info(upstream, key_of(request), art) is None:
                return Response.error(404, "not_found", f"no artifact {art}")
        return None


@mutant
class LatestEmptyRelaunch404(Tracked):
    name = "open_latest_empty_relaunch_404"
    clause = "OPEN-1.a"
    summary = "latest on an artifact that exists but has no versions is 404 (nothing to resume)"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if not _open(request, "latest"):
            return None
        info = artifact_info(upstream, key_of(request), str(artifact_of(request)))
        if info is not None and not info.get("versions"):
            return Response.error(404, "not_found", "the artifact has no version to resume")
        return None


# --- OPEN-2.a: the resumed version is the latest committed ------------------------------


def _version(upstream: Upstream, key: str | None, artifact: str, name: str) -> Any:
    reply = api_get(upstream, "versions/read", key, artifact=artifact, version=name, urls="1")
    return reply.json() if reply.ok else None


@mutant
class ResumeSecondHighest(Tracked):
    name = "open_resume_second_highest_at_3_versions"
    clause = "OPEN-2.a"
    summary = "with 3 or more versions, latest resumes from the second highest step"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_open(request, "latest") and response.ok):
            return response
        reply = response.json()
        versions = versions_of(upstream, key_of(request), reply["artifact"])
        if len(versions) < 3:
            return response
        older = _version(upstream, key_of(request), reply["artifact"], versions[-2]["version"])
        return response.with_json(dict(reply, resume_from=older)) if older else response


@mutant
class ResumeDropsLastFile(Tracked):
    name = "open_resume_drops_last_of_3_files"
    clause = "OPEN-2.a"
    summary = "a resumed version with 3 or more files lists all but the last"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_open(request, "latest") and response.ok):
            return response
        reply = response.json()
        rf = reply.get("resume_from")
        if isinstance(rf, dict) and len(rf.get("files") or []) >= 3:
            return response.with_json(dict(reply, resume_from=dict(rf, files=rf["files"][:-1])))
        return response


# --- OPEN-2.b: the resumed version's URLs ------------------------------------------------


@mutant
class ResumeUrlsSwapped(Tracked):
    name = "open_resume_urls_swapped_between_files"
    clause = "OPEN-2.b"
    summary = "resume_from's first two file URLs are swapped"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_open(request, "latest") and response.ok):
            return response
        reply = response.json()
        rf = reply.get("resume_from")
        files = [dict(f) for f in (rf or {}).get("files") or []]
        if len(files) < 2 or "url" not in files[0] or "url" not in files[1]:
            return response
        files[0]["url"], files[1]["url"] = files[1]["url"], files[0]["url"]
        return response.with_json(dict(reply, resume_from=dict(rf, files=files)))


@mutant
class ResumeUrlsOfOlder(Tracked):
    name = "open_resume_urls_of_previous_version"
    clause = "OPEN-2.b"
    summary = "with 2 or more versions, resume_from's URLs serve the previous version's files"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_open(request, "latest") and response.ok):
            return response
        reply = response.json()
        rf = reply.get("resume_from")
        if not isinstance(rf, dict):
            return response
        versions = versions_of(upstream, key_of(request), reply["artifact"])
        if len(versions) < 2:
            return response
        older = _version(upstream, key_of(request), reply["artifact"], versions[-2]["version"])
        urls = {f["name"]: f.get("url") for f in (older or {}).get("files") or []}
        files = [dict(f, url=urls.get(f["name"]) or f.get("url")) for f in rf.get("files") or []]
        return response.with_json(dict(reply, resume_from=dict(rf, files=files)))


# --- OPEN-3.a: fresh on an artifact with versions is refused ---------------------------


@mutant
class FreshNotEmptyCode(Tracked):
    name = "open_fresh_refused_not_empty_at_2_versions"
    clause = "OPEN-3.a"
    summary = "a fresh open on an artifact with 2 or more versions is 409 not_empty"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if _open(request, None) and _code(response) == "has_checkpoints":
            versions = versions_of(upstream, key_of(request), str(artifact_of(request)))
            if len(versions) >= 2:
                return Response.error(409, "not_empty", "the artifact is not empty")
        return response


@mutant
class FreshAllowedAtThree(Tracked):
    name = "open_fresh_allowed_at_3_versions"
    clause = "OPEN-3.a"
    summary = "a fresh open on an artifact with 3 or more versions succeeds as latest, resume null"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        if not _open(request, None):
            return None
        if len(versions_of(upstream, key_of(request), str(artifact_of(request)))) >= 3:
            rewritten = request.with_json(dict(request.json(), resume="latest"))
            return rewritten.with_header("X-Mutant-Fresh", "1")
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.header("X-Mutant-Fresh") and response.ok:
            return response.with_json(dict(response.json(), resume_from=None))
        return response


# --- OPEN-3.b: a refused fresh open changes nothing --------------------------------------


class _RefusalReopens(Tracked):
    """After a refused fresh open, the mutant opens latest as ``holder_of`` says."""

    def holder_of(self, request: Request, current: str) -> str | None:
        raise NotImplementedError

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not (_open(request, None) and _code(response) == "has_checkpoints"):
            return response
        art = str(artifact_of(request))
        info = artifact_info(upstream, key_of(request), art)
        holder = self.holder_of(request, str((info or {}).get("holder") or ""))
        if holder:
            open_latest(upstream, key_of(request), art, holder)
        return response


@mutant
class FreshRefusalBumps(_RefusalReopens):
    name = "open_fresh_refusal_reopens_for_holder"
    clause = "OPEN-3.b"
    summary = "a refused fresh open re-opens the artifact for its current holder (epoch rises)"

    def holder_of(self, request: Request, current: str) -> str | None:
        return current or None


@mutant
class FreshRefusalTakesOver(_RefusalReopens):
    name = "open_fresh_second_refusal_takes_over"
    clause = "OPEN-3.b"
    summary = "the second refused fresh open of an artifact hands it to the refused holder"

    def holder_of(self, request: Request, current: str) -> str | None:
        art = str(artifact_of(request))
        with self.lock:
            seen = self.state.setdefault("refusals", {})
            seen[art] = seen.get(art, 0) + 1
            if seen[art] < 2:
                return None
        return str(body_of(request).get("holder") or "fresh-box")


# --- OPEN-3.c: fresh on an empty artifact succeeds ---------------------------------------


@mutant
class FreshReopenEmptyRefused(Tracked):
    name = "open_fresh_reopen_of_empty_refused"
    clause = "OPEN-3.c"
    summary = "a fresh open of an artifact that exists but is empty is 409 has_checkpoints"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if not _open(request, None):
            return None
        info = artifact_info(upstream, key_of(request), str(artifact_of(request)))
        if info is not None and not info.get("versions") and not info.get("forked_from"):
            return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
        return None


@mutant
class FreshForkTargetRefused(Tracked):
    name = "open_fresh_of_empty_fork_refused"
    clause = "OPEN-3.c"
    summary = "a fresh open of an empty forked artifact is 409 has_checkpoints (source counted)"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if not _open(request, None):
            return None
        info = artifact_info(upstream, key_of(request), str(artifact_of(request)))
        if info is not None and not info.get("versions") and info.get("forked_from"):
            return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
        return None
