"""Subtler mutants of key scopes, refusals and forks: right for the main key and plain
artifacts, wrong only for a fresh open of a new artifact by a reader, a prefix-scoped
writer's usage, a refused fresh open of a fork, a source name with capitals, a zero-byte
file, a relaunch, or the usage of a fork."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.m_read import Watching
from conformance.mutants.m_usage import UsageMutant, retotal
from conformance.mutants.tracking import Tracked, artifact_of, body_of, key_of, with_key


def _open(request: Request) -> bool:
    return request.endpoint == "artifacts/open" and request.method == "POST"


# --- AUTH --------------------------------------------------------------------------------


@mutant
class ReaderFreshOpenOfNewArtifact(Tracked):
    """A fresh open (``resume: null``) of an artifact that does not exist yet, by a key that
    cannot write it, is answered as if by a writer (the scope is checked on existing
    artifacts only)."""

    name = "auth-reader-fresh-open-of-new-artifact-answered"
    clause = "AUTH-2.a"
    summary = "a fresh open of a new artifact by a key that cannot write it succeeds"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if not _open(request) or response.status != 403 or body_of(request).get("resume"):
            return response
        with self.lock:
            key = self.t.good_key()
            known = artifact_of(request) in self.t.opens
        if key is None or known or key == key_of(request):
            return response
        again = upstream.send(with_key(request, key))
        return again if again.ok else response


@mutant
class ScopedWriterUsageRefused(Tracked):
    """``usage/read?artifact=`` is 403 for a key that was refused somewhere else (a
    prefix-scoped key), even on an artifact it writes."""

    name = "auth-scoped-writer-usage-of-own-artifact-403"
    clause = "AUTH-3.c"
    summary = "a prefix-scoped write key gets 403 on usage/read of its own artifact"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        key = key_of(request)
        if request.endpoint != "usage/read" or not response.ok or not request.arg("artifact"):
            return response
        with self.lock:
            scoped = key in self.t.refused_keys and key in self.t.writer_keys
        if scoped:
            return Response.error(403, "forbidden", "the key cannot read this artifact")
        return response


@mutant
class ReaderForkIntoNewArtifact(Tracked):
    """A fork into a new artifact by a key that can read the source but not write the
    target is answered as if by a writer."""

    name = "fork_target_write_not_checked_for_new_artifact"
    clause = "FORK-1.d"
    summary = "a read-only key forks into a new artifact it cannot write"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        resume = body_of(request).get("resume")
        if not _open(request) or response.status != 403 or not isinstance(resume, str) \
                or not SOURCE.match(resume):
            return response
        with self.lock:
            key = self.t.good_key()
            known = artifact_of(request) in self.t.opens
        if key is None or known or key == key_of(request):
            return response
        again = upstream.send(with_key(request, key))
        return again if again.ok else response


# --- OPEN-3.b / FORK-2.b -----------------------------------------------------------------


class _ForkedFrom(Tracked):
    """Rewrites ``forked_from`` in artifacts/read replies with :meth:`shown`."""

    def shown(self, artifact: str, forked: dict[str, Any]) -> Any:
        return forked

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = response.json()
        if request.endpoint != "artifacts/read" or not response.ok \
                or not isinstance(reply, dict) or not isinstance(reply.get("forked_from"), dict):
            return response
        new = self.shown(str(reply.get("artifact")), reply["forked_from"])
        return response if new == reply["forked_from"] else response.with_json(
            dict(reply, forked_from=new))


@mutant
class FreshRefusalDropsForkedFrom(_ForkedFrom):
    """A refused fresh open of a forked artifact clears its ``forked_from`` (the refusal
    path resets the artifact's origin before it checks for versions)."""

    name = "open_fresh_refusal_clears_forked_from"
    clause = "OPEN-3.b"
    summary = "a refused fresh open of a forked artifact leaves forked_from null"

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        if _open(request) and body_of(request).get("resume") is None \
                and error_code(response) == "has_checkpoints":
            self.state.setdefault("cleared", set()).add(artifact_of(request))

    def shown(self, artifact: str, forked: dict[str, Any]) -> Any:
        with self.lock:
            return None if artifact in self.state.get("cleared", set()) else forked


@mutant
class ForkedFromLowerCased(_ForkedFrom):
    """``forked_from.artifact`` is the source's name lower-cased."""

    name = "fork_forked_from_artifact_lower_cased"
    clause = "FORK-2.b"
    summary = "forked_from names the source in lower case (wrong for names with capitals)"

    def shown(self, artifact: str, forked: dict[str, Any]) -> Any:
        return dict(forked, artifact=str(forked.get("artifact")).lower())


# --- READ-2.a / VER-2.b ------------------------------------------------------------------


@mutant
class EmptyFileUrl404(Watching):
    """A plain GET of a zero-byte file's signed URL answers 404 (nothing was stored)."""

    name = "read-url-of-zero-byte-file-404"
    clause = "READ-2.a"
    summary = "a plain GET of a zero-byte file's URL answers 404"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "GET" and request.method == "GET" \
                and info.get("size") == 0 and not request.header("Range"):
            return Response.error(404, "not_found", "no such object")
        return self.forward(request, upstream)


@mutant
class ShaUpperAfterRelaunch(Tracked):
    """Versions committed before the artifact's newest open report their sha256 in upper
    case (a migration on relaunch)."""

    name = "ver-immutable-sha256-upper-cased-after-relaunch"
    clause = "VER-2.b"
    summary = "after a relaunch, older versions report their sha256 in upper case"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = response.json()
        if request.endpoint != "versions/read" or not response.ok or not isinstance(reply, dict):
            return response
        with self.lock:
            opens = self.t.opens.get(str(reply.get("artifact")), [])
            newest = opens[-1].epoch if opens else None
        if newest is None or not isinstance(reply.get("epoch"), int) or reply["epoch"] >= newest:
            return response
        for f in reply.get("files") or []:
            if isinstance(f.get("sha256"), str):
                f["sha256"] = f["sha256"].upper()
        return response.with_json(reply)


# --- USAGE-1.a ---------------------------------------------------------------------------


@mutant
class ForkWritesMissing(UsageMutant):
    """The usage of a forked artifact leaves out what its own boxes wrote (writes are
    booked on the fork source)."""

    name = "usage-writes-of-a-fork-missing-from-its-usage"
    clause = "USAGE-1.a"
    summary = "usage/read?artifact=<fork> has no write rows for the fork's own versions"

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        resume = body_of(request).get("resume")
        if _open(request) and resp.ok and isinstance(resume, str) and SOURCE.match(resume):
            with self.lock:
                self.state.setdefault("forks", set()).add(artifact_of(request))
        return resp

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            forks = set(self.state.get("forks", set()))
        rows = [r for r in body["transfers"]
                if not (r.get("direction") == "write" and r.get("artifact") in forks)]
        if len(rows) == len(body["transfers"]):
            return None
        body["transfers"] = rows
        return retotal(body)
