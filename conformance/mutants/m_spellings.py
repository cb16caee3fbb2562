"""Mutants of edge spellings the contract pins, and of duplicates: ``LATEST`` taken for
``latest``, a ``resume`` of another type taken for ``latest``, a stray slash after a name,
reads without ``artifact``, and the same upload committed twice."""

from __future__ import annotations

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.tracking import Tracked, api_get, body_of, key_of

READS = ("versions/read", "versions/list", "artifacts/read")


@mutant
class ReadLatestAnyCase(Tracked):
    name = "ver-read-of-version-LATEST-taken-for-latest"
    clause = "VER-1.a"
    summary = "versions/read with version=LATEST (or Latest) answers the latest version"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        version = request.arg("version") if request.endpoint == "versions/read" else None
        if version and version != "latest" and version.lower() == "latest":
            return request.with_query(version="latest")
        return None


@mutant
class ResumeLatestAnyCase(Tracked):
    name = "open-resume-LATEST-taken-for-latest"
    clause = "API-1.f"
    summary = "an open with resume 'LATEST' (or 'Latest', ' latest') resumes from latest"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        resume = body.get("resume") if request.endpoint == "artifacts/open" else None
        if isinstance(resume, str) and resume != "latest" and resume.strip().lower() == "latest":
            return request.with_json({**body, "resume": "latest"})
        return None


@mutant
class ResumeOfOtherTypeIsLatest(Tracked):
    name = "open-resume-of-another-type-taken-for-latest"
    clause = "API-1.f"
    summary = "an open whose resume is a number, boolean, list or object resumes from latest"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        if request.endpoint == "artifacts/open" and "resume" in body \
                and not isinstance(body["resume"], str | type(None)):
            return request.with_json({**body, "resume": "latest"})
        return None


@mutant
class TrailingSlashStripped(Tracked):
    name = "api-artifact-name-with-a-trailing-slash-read-as-the-name"
    clause = "API-1.f"
    summary = "reads of 'project/name/' answer as for 'project/name'"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        artifact = request.arg("artifact") if request.endpoint in READS else None
        if artifact and artifact.endswith("/") and artifact.count("/") == 2:
            return request.with_query(artifact=artifact.rstrip("/"))
        return None


@mutant
class ReadWithoutArtifactNotFound(Tracked):
    name = "api-read-without-artifact-gets-404"
    clause = "API-1.f"
    summary = "versions/read, versions/list and artifacts/read without artifact answer 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint in READS and request.arg("artifact") is None \
                and error_code(response) == "invalid_argument":
            return Response.error(404, "not_found", "no such artifact")
        return response


@mutant
class RepeatedCommitAnswersVersion(Tracked):
    """Committing an upload that was already committed answers 200 with the version it
    made (an idempotent retry), instead of 409 version_exists."""

    name = "ver-commit-of-a-committed-upload-answers-200"
    clause = "VER-2.a"
    summary = "a second commit of the same upload answers 200 and the version, not 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint == "versions/commit" and response.ok:
            with self.lock:
                self.state.setdefault("done", {})[(body.get("artifact"), body.get("upload"))] = \
                    (response.json() or {}).get("version")
            return response
        if request.endpoint != "versions/commit" or error_code(response) != "version_exists":
            return response
        with self.lock:
            version = self.state.get("done", {}).get((body.get("artifact"), body.get("upload")))
        if not version:
            return response
        again = api_get(upstream, "versions/read", key_of(request),
                        artifact=str(body.get("artifact")), version=str(version))
        return again if again.ok else response
