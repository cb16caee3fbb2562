"""Mutants of edge spellings the contract pins, and of duplicates: ``LATEST`` taken for
``latest``, a ``resume`` of another type taken for ``latest``, a stray slash after a name,
reads without ``artifact``, the same upload committed twice, and name parts that are ``.``
and ``..`` (the rest of the name grammar: :mod:`conformance.mutants.m_grammar`)."""

from __future__ import annotations

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.tracking import Tracked, api_get, artifact_of, body_of, key_of

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


@mutant
class UrlsWhenNotAsked(Tracked):
    name = "shape-read-without-urls-parameter-gives-urls"
    clause = "API-1.c"
    summary = "versions/read with no urls parameter answers as with urls=1"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        if request.endpoint == "versions/read" and request.arg("urls") is None:
            return request.with_query(urls="1")
        return None


@mutant
class NamesComparedIgnoringCase(Tracked):
    name = "ver-write-of-names-differing-only-in-case-refused"
    clause = "VER-1.c"
    summary = "a write declaring 'Model.pt' and 'model.pt' answers 400 (names folded to lower case)"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        files = body_of(request).get("files") if request.endpoint == "versions/write" else None
        names = [f.get("name") for f in files or [] if isinstance(f, dict)]
        if all(isinstance(n, str) for n in names) and len(set(names)) == len(names) \
                and len({n.lower() for n in names}) < len(names):
            return Response.error(400, "invalid_argument", "a file name is listed twice")
        return None


@mutant
class ForkIntoItsOwnSource(Tracked):
    """A fork whose source is a version of the artifact being opened is taken as a resume
    of that artifact at latest (no 409 not_empty)."""

    name = "fork-into-its-own-source-resumes-instead-of-409"
    clause = "FORK-1.a"
    summary = "a fork of o41://A/step-N opened on A itself succeeds as a resume of A"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        resume = body.get("resume")
        if request.endpoint != "artifacts/open" or error_code(response) != "not_empty" \
                or not isinstance(resume, str) \
                or resume.rpartition("/")[0] != f"o41://{body.get('artifact')}":
            return response
        again = upstream.send(request.with_json({**body, "resume": "latest"}))
        return again if again.ok else response


@mutant
class CloudEchoedAsSpelled(Tracked):
    """Locations in replies spell the cloud as the box's place did (``GCP``) when it is
    one of the box's own locations."""

    name = "place-location-cloud-echoed-in-the-box-spelling"
    clause = "API-1.g"
    summary = "write_location and locations read back say 'GCP' when the box said GCP"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json()
        sent = body_of(request)
        place = sent.get("place") if request.endpoint == "artifacts/open" else None
        spelled = place.get("cloud") if isinstance(place, dict) else None
        if request.endpoint == "versions/read":
            spelled = (request.arg("place") or "").partition("/")[0] or None
        if not response.ok or not isinstance(body, dict) or not isinstance(spelled, str) \
                or spelled == spelled.lower():
            return response

        def respell(node: object) -> object:
            if isinstance(node, dict):
                node = {k: respell(v) for k, v in node.items()}
                if node.get("cloud") == spelled.lower() and "region" in node:
                    node["cloud"] = spelled
            elif isinstance(node, list):
                node = [respell(v) for v in node]
            return node

        return response.with_json(respell(body))


def _artifact_of(request: Request) -> str | None:
    """The artifact an open or a read names (where the rewrite below knows to put it)."""
    return artifact_of(request) if request.endpoint in ("artifacts/open", *READS) else None


@mutant
class DotPartsAccepted(Tracked):
    name = "api-artifact-name-part-dot-or-dot-dot-accepted"
    clause = "API-1.f"
    summary = "a name part '.' or '..' (such as 'p/..') is taken as a name of its own"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        name = _artifact_of(request)
        if not name or not any(part in (".", "..") for part in name.split("/")):
            return None
        safe = "/".join({".": "dot", "..": "dot-dot"}.get(p, p) for p in name.split("/"))
        if request.endpoint == "artifacts/open":
            return request.with_json({**body_of(request), "artifact": safe})
        return request.with_query(artifact=safe)

