"""Mutants written as a blind adversary would, from docs/contract.md alone, for what opens
and artifacts/read answer: a Version built from the artifact's state instead of the
version's own, a fork's resume named after the fork, a count or a time that goes stale,
optional-looking keys left out, a foreign token taken by its name."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.tracking import Tracked, artifact_of, body_of, key_of, with_key


def _open_reply(request: Request, response: Response) -> dict[str, Any] | None:
    reply = response.json()
    if request.endpoint == "artifacts/open" and response.ok and isinstance(reply, dict):
        return reply
    return None


# --- Versions built from the wrong record ------------------------------------------------


@mutant
class ResumeEpochOfTheOpen(Tracked):
    """``resume_from`` carries the epoch and holder of the open that resumes it, not of the
    open that wrote the version (the Version is filled from the artifact's state)."""

    name = "open-resume-from-epoch-and-holder-of-the-resuming-open"
    clause = "API-1.b"
    summary = "resume_from says the resuming open's epoch and holder, not the writer's"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        resume = (reply or {}).get("resume_from")
        if not isinstance(resume, dict) or resume.get("artifact") != reply.get("artifact"):
            return response
        resume = dict(resume, epoch=reply.get("epoch"), holder=reply.get("holder"))
        return response.with_json(dict(reply, resume_from=resume))


@mutant
class ForkResumeNamedAfterFork(Tracked):
    """A fork's ``resume_from.artifact`` names the new artifact, not the source it is a
    version of."""

    name = "fork-resume-from-artifact-names-the-fork"
    clause = "FORK-2.a"
    summary = "a fork's resume_from.artifact is the fork's name instead of the source's"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        resume = (reply or {}).get("resume_from")
        if not isinstance(resume, dict) or resume.get("artifact") == reply.get("artifact"):
            return response
        return response.with_json(dict(reply, resume_from=dict(resume,
                                                                artifact=reply.get("artifact"))))


@mutant
class MadeUpHolderNotOnVersions(Tracked):
    """Versions written by a box whose holder was made up show ``holder: null`` (the
    made-up id lives on the open, not on what it writes)."""

    name = "fence-made-up-holder-missing-from-its-versions"
    clause = "FENCE-2.f"
    summary = "versions written under a made-up holder read back with holder null"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        if reply is not None:
            if "holder" not in body_of(request):
                with self.lock:
                    self.state.setdefault("made", set()).add(
                        (reply.get("artifact"), reply.get("epoch")))
            return response
        body = response.json()
        if request.endpoint not in ("versions/read", "versions/list", "versions/commit") \
                or not response.ok or not isinstance(body, dict):
            return response
        with self.lock:
            made = set(self.state.get("made", set()))

        def fix(v: Any) -> Any:
            if isinstance(v, dict) and (v.get("artifact"), v.get("epoch")) in made:
                return dict(v, holder=None)
            return v

        if request.endpoint == "versions/list":
            return response.with_json(dict(body, versions=[fix(v) for v in
                                                           body.get("versions") or []]))
        return response.with_json(fix(body))


# --- artifacts/read ----------------------------------------------------------------------


@mutant
class CountKeepsDeleted(Tracked):
    """``artifacts/read``'s ``versions`` still counts deleted versions."""

    name = "artifact-read-versions-count-keeps-deleted-versions"
    clause = "API-1.e"
    summary = "artifacts/read's versions count does not drop when a version is deleted"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/delete" and response.ok:
            with self.lock:
                gone = self.state.setdefault("gone", {})
                art = artifact_of(request)
                gone[art] = gone.get(art, 0) + 1
            return response
        reply = response.json()
        if request.endpoint != "artifacts/read" or not response.ok or not isinstance(reply, dict):
            return response
        with self.lock:
            extra = self.state.get("gone", {}).get(reply.get("artifact"), 0)
        if not extra or not isinstance(reply.get("versions"), int):
            return response
        return response.with_json(dict(reply, versions=reply["versions"] + extra))


@mutant
class CreatedAtOfNewestOpen(Tracked):
    """``artifacts/read``'s ``created_at`` is the time of the artifact's newest open (the
    row is written again by every open)."""

    name = "artifact-created-at-moves-with-every-open"
    clause = "API-1.e"
    summary = "artifacts/read's created_at is the newest open's time, not the creation's"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        if reply is not None:
            now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            with self.lock:
                seen = self.state.setdefault("opened", {})
                # the first open is the creation; from the second on the time moves
                seen[reply.get("artifact")] = (seen.get(reply.get("artifact"), (0, None))[0]
                                               + 1, now)
            return response
        body = response.json()
        if request.endpoint != "artifacts/read" or not response.ok or not isinstance(body, dict):
            return response
        with self.lock:
            count, when = self.state.get("opened", {}).get(body.get("artifact"), (0, None))
        if count < 2 or when is None:
            return response
        return response.with_json(dict(body, created_at=when))


@mutant
class ForkedFromLeftOut(Tracked):
    """``artifacts/read`` leaves ``forked_from`` out when the artifact is no fork."""

    name = "artifact-read-forked-from-key-left-out-when-null"
    clause = "API-1.e"
    summary = "artifacts/read has no forked_from key (rather than null) for a non-fork"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json()
        if request.endpoint != "artifacts/read" or not response.ok or not isinstance(body, dict) \
                or body.get("forked_from") is not None:
            return response
        return response.with_json({k: v for k, v in body.items() if k != "forked_from"})


@mutant
class FencedLeftOut(Tracked):
    """An open that fenced nobody leaves ``fenced`` out instead of answering null."""

    name = "open-fenced-key-left-out-when-null"
    clause = "API-1.g"
    summary = "an open that fenced nobody has no fenced key (rather than null)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        if reply is None or reply.get("fenced") is not None:
            return response
        return response.with_json({k: v for k, v in reply.items() if k != "fenced"})


@mutant
class WarningsAsObjects(Tracked):
    """An open's warnings are objects ``{"code", "message"}``, not strings."""

    name = "open-warnings-are-objects"
    clause = "API-1.g"
    summary = "an open's warnings are {code, message} objects instead of strings"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        if reply is None or not reply.get("warnings"):
            return response
        warned = [{"code": "placement", "message": w} for w in reply["warnings"]]
        return response.with_json(dict(reply, warnings=warned))


# --- FENCE-2 -----------------------------------------------------------------------------


@mutant
class FencedNamesLatestWriter(Tracked):
    """An open's ``fenced`` names the epoch and holder that wrote the latest version (when
    there is one), not the open before it."""

    name = "fence-fenced-names-the-latest-versions-writer"
    clause = "FENCE-2.d"
    summary = "fenced names who wrote the latest version, not the open just before"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = _open_reply(request, response)
        if reply is None or not isinstance(reply.get("fenced"), dict):
            return response
        from conformance.mutants.tracking import versions_of  # noqa: PLC0415

        listed = versions_of(upstream, key_of(request), str(reply.get("artifact")))
        if not listed:
            return response
        last = listed[-1]
        fenced = {"epoch": last.get("epoch"), "holder": last.get("holder")}
        return response if fenced == reply["fenced"] else response.with_json(
            dict(reply, fenced=fenced))


@mutant
class TokenOfSameNameElsewhere(Tracked):
    """A write or commit with the token of an artifact of the same name in another project
    is taken as this artifact's own newest token (tokens are looked up by name part)."""

    name = "fence-token-of-same-name-in-another-project-accepted"
    clause = "FENCE-2.e"
    summary = "a token of 'q/run' is accepted for 'p/run' (looked up by name, not project)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint not in ("versions/write", "versions/commit") \
                or response.status != 400:
            return response
        body = body_of(request)
        art = artifact_of(request)
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
            newest = self.t.newest.get(str(art))
        if info is None or newest is None or not art or info.artifact == art \
                or not key_of(request) or info.artifact.split("/")[-1] != art.split("/")[-1]:
            return response
        again = upstream.send(with_key(request.with_json(dict(body, token=newest.token)),
                                       str(key_of(request))))
        return again if again.ok else response



# --- opens that fence too little, forks that reach into their source ---------------------


def _is_fork(resume: Any) -> bool:
    from conformance.mutants.m_fork import SOURCE  # noqa: PLC0415

    return isinstance(resume, str) and SOURCE.match(resume) is not None


class _StaleWriteAfter(Tracked):
    """A write refused 409 ``fenced`` is sent again with the artifact's newest token when
    the newest open was of the kind :meth:`kind` picks (that kind of open forgot to fence)."""

    def kind(self, resume: Any) -> bool:
        raise NotImplementedError

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        from conformance.mutants.base import error_code  # noqa: PLC0415

        if request.endpoint != "versions/write" or error_code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            stale = self.t.tokens.get(str(body.get("token")))
            newest = self.t.newest.get(str(body.get("artifact")))
        if stale is None or newest is None or not self.kind(newest.resume):
            return response
        retry = request.with_json(dict(body, token=newest.token))
        again = upstream.send(retry)
        with self.lock:
            self.observe(retry, again)
        return again if again.ok else response


@mutant
class StaleWriteAfterFork(_StaleWriteAfter):
    """A fork into an artifact opened before (still empty) does not fence that artifact's
    earlier holder: its writes are taken."""

    name = "fence-fork-into-opened-artifact-leaves-old-token-writing"
    clause = "FENCE-2.a"
    summary = "after a fork into an opened empty artifact, the earlier token still writes"

    def kind(self, resume: Any) -> bool:
        return _is_fork(resume)


@mutant
class StaleWriteAfterFresh(_StaleWriteAfter):
    """A fresh open (``resume: null``) of an empty artifact opened before does not fence
    the earlier holder: its writes are taken."""

    name = "fence-fresh-reopen-of-empty-artifact-leaves-old-token-writing"
    clause = "FENCE-2.a"
    summary = "after a fresh open of an opened empty artifact, the earlier token still writes"

    def kind(self, resume: Any) -> bool:
        return resume is None


@mutant
class ForkClosesSourceUploads(Tracked):
    """A fork snapshots its source by closing the source's open uploads: the source holder's
    commit of an upload it started before the fork gets 409 ``fenced``."""

    name = "fork-fences-the-sources-upload-in-flight"
    clause = "FORK-2.c"
    summary = "the source's upload started before a fork can no longer be committed (409)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint == "versions/write" and response.ok:
            with self.lock:
                n = self.state["n"] = self.state.get("n", 0) + 1
                self.state.setdefault("started", {})[
                    str((response.json() or {}).get("upload"))] = n
            return response
        reply = _open_reply(request, response)
        if reply is not None and _is_fork(body.get("resume")):
            source = str(body["resume"]).removeprefix("o41://").rsplit("/", 1)[0]
            with self.lock:
                n = self.state["n"] = self.state.get("n", 0) + 1
                self.state.setdefault("forked", {})[source] = n
            return response
        return response

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if request.endpoint != "versions/commit":
            return None
        body = body_of(request)
        with self.lock:
            started = self.state.get("started", {}).get(str(body.get("upload")))
            forked = self.state.get("forked", {}).get(str(body.get("artifact")))
        if started is not None and forked is not None and started < forked:
            return Response.error(409, "fenced", "the artifact was forked since this upload")
        return None
