"""Mutants of reply shapes (API-1, READ-1.c, FENCE-2.f): each keeps every rule of the
"Rules" table but bends one sentence of the HTTP API section, as a careless serializer
would."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Mutant, Request, Response, Upstream, mutant
from conformance.mutants.m_read import error_code, obj, with_headers


def _versions(value: Any, change: Any) -> Any:
    """``value`` with ``change`` applied to every Version object in it (a dict that has
    ``version`` and ``step``), nested ones (``resume_from``, list entries) too."""
    if isinstance(value, list):
        return [_versions(v, change) for v in value]
    if isinstance(value, dict):
        out = {k: _versions(v, change) for k, v in value.items()}
        return change(out) if "version" in out and "step" in out else out
    return value


class VersionShape(Mutant):
    """Rewrites every Version in successful API replies of ``endpoints`` with :meth:`fix`."""

    endpoints: tuple[str, ...] = ("versions/read", "versions/list", "versions/commit",
                                  "artifacts/open")

    def fix(self, version: dict[str, Any]) -> dict[str, Any]:
        return version

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint not in self.endpoints or not resp.ok or not obj(resp):
            return resp
        return resp.with_json(_versions(obj(resp), self.fix))


@mutant
class StepWrapsAtTenThousand(VersionShape):
    """``step`` keeps only the last four digits of the name (a 16-bit-minded parser)."""

    name = "shape-step-wraps-above-9999"
    clause = "API-1.b"
    summary = "a Version's step is its number modulo 10000 once it reaches 10000"

    def fix(self, version: dict[str, Any]) -> dict[str, Any]:
        step = version.get("step")
        return {**version, "step": step % 10_000} if isinstance(step, int) else version


@mutant
class SizeOfFirstFileOnly(VersionShape):
    """``size`` is the size of the first file instead of the sum of all files."""

    name = "shape-size-is-first-file"
    clause = "API-1.b"
    summary = "a Version's size is its first file's size, not the sum of its files"
    endpoints = ("versions/read", "versions/commit")

    def fix(self, version: dict[str, Any]) -> dict[str, Any]:
        files = version.get("files") or []
        if len(files) < 2 or not isinstance(files[0], dict):
            return version
        return {**version, "size": files[0].get("size")}


@mutant
class ReadCreatedAtNotATimestamp(VersionShape):
    """``created_at`` of a read Version is the version name, not a timestamp."""

    name = "shape-created-at-not-a-timestamp"
    clause = "API-1.b"
    summary = "versions/read answers created_at as a plain string that is no time"
    endpoints = ("versions/read",)

    def fix(self, version: dict[str, Any]) -> dict[str, Any]:
        return {**version, "created_at": "committed"}


@mutant
class ListCarriesFiles(Mutant):
    """``versions/list`` entries carry an (empty) ``files`` list."""

    name = "shape-list-entries-carry-files"
    clause = "READ-1.c"
    summary = "versions/list gives each Version a files field (an empty list)"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(resp)
        if request.endpoint != "versions/list" or not resp.ok or "versions" not in body:
            return resp
        listed = [{**v, "files": []} if isinstance(v, dict) else v for v in body["versions"]]
        return resp.with_json({**body, "versions": listed})


@mutant
class ListHolderOfNewestOpen(Mutant):
    """``versions/list`` names the artifact's newest holder on every version."""

    name = "shape-list-holder-is-newest-open"
    clause = "READ-1.c"
    summary = "versions/list gives every Version the holder of the last one listed"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        listed = obj(resp).get("versions")
        if request.endpoint != "versions/list" or not resp.ok or not listed:
            return resp
        last = listed[-1]
        fixed = [{**v, "holder": last.get("holder"), "epoch": last.get("epoch")}
                 for v in listed]
        return resp.with_json({**obj(resp), "versions": fixed})


@mutant
class NoUrlsExpireAt(VersionShape):
    """A Version with URLs has no ``urls_expire_at``."""

    name = "shape-urls-expire-at-missing"
    clause = "API-1.c"
    summary = "versions/read with urls=1 leaves out urls_expire_at"
    endpoints = ("versions/read",)

    def fix(self, version: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in version.items() if k != "urls_expire_at"}


@mutant
class UrlsZeroStillSigned(Mutant):
    """``urls=0`` is read as "urls given": the files come signed anyway."""

    name = "shape-urls-0-gives-urls"
    clause = "API-1.c"
    summary = "versions/read with urls=0 answers as if urls=1"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.endpoint == "versions/read" and request.arg("urls") == "0":
            request = request.with_query(urls="1")
        return upstream.send(request)


class WriteShape(Mutant):
    def fix(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint != "versions/write" or not resp.ok or not obj(resp):
            return resp
        return resp.with_json(self.fix(obj(resp)))


@mutant
class WriteRouteAlwaysLocal(WriteShape):
    """The write's ``route`` is ``local`` wherever the box is."""

    name = "shape-write-route-always-local"
    clause = "API-1.d"
    summary = "versions/write answers route local even when the write location is away"

    def fix(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "route": "local"}


@mutant
class WriteWithoutExpiry(WriteShape):
    """The write answers no ``expires_at``."""

    name = "shape-write-expires-at-missing"
    clause = "API-1.d"
    summary = "versions/write leaves out expires_at"

    def fix(self, body: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in body.items() if k != "expires_at"}


class ArtifactShape(Mutant):
    def fix(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint != "artifacts/read" or not resp.ok or not obj(resp):
            return resp
        return resp.with_json(self.fix(obj(resp)))


@mutant
class LatestEmptyString(ArtifactShape):
    """``latest`` of an artifact without versions is ``""`` instead of null."""

    name = "shape-artifact-latest-empty-string"
    clause = "API-1.e"
    summary = 'artifacts/read answers latest "" (not null) while there is no version'

    def fix(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "latest": ""} if body.get("latest") is None else body


@mutant
class ForkedFromEmptyObject(ArtifactShape):
    """``forked_from`` of an artifact that was not forked is ``{}`` instead of null."""

    name = "shape-artifact-forked-from-empty-object"
    clause = "API-1.e"
    summary = "artifacts/read answers forked_from {} (not null) for an artifact never forked"

    def fix(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "forked_from": {}} if body.get("forked_from") is None else body


@mutant
class MadeUpHolderNotStored(Mutant):
    """The made-up holder is answered by the open but stored as null: artifacts/read and
    the versions then show no holder."""

    name = "made-up-holder-stored-as-null"
    clause = "FENCE-2.f"
    summary = "an open without holder answers a made-up one but artifacts/read shows null"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(resp)
        if request.endpoint == "artifacts/open" and resp.ok and "holder" not in obj(request):
            with self.lock:
                self.state.setdefault("made_up", set()).add(body.get("holder"))
        elif request.endpoint == "artifacts/read" and resp.ok:
            with self.lock:
                if body.get("holder") in self.state.get("made_up", set()):
                    return resp.with_json({**body, "holder": None})
        return resp


@mutant
class MessageIsTheCode(Mutant):
    """Every error's ``message`` repeats its code instead of a human sentence."""

    name = "error-message-is-the-code"
    clause = "API-1.a"
    summary = "error replies carry message equal to the code (e.g. 'not_found')"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        code = error_code(resp) if request.kind == "api" else None
        if code is None:
            return resp
        return resp.with_json({"error": {"code": code, "message": code}})


@mutant
class ErrorsAsPlainText(Mutant):
    """Error bodies are sent as ``text/plain`` (the JSON text is the same)."""

    name = "error-content-type-text-plain"
    clause = "API-1.a"
    summary = "API errors keep their JSON body but say Content-Type text/plain"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.kind != "api" or error_code(resp) is None:
            return resp
        return with_headers(resp, Content_Type="text/plain; charset=utf-8")


@mutant
class SpaceInNameAccepted(Mutant):
    """Artifact names with a space are taken as if the space were a ``_``."""

    name = "bad-input-space-in-artifact-name-accepted"
    clause = "API-1.f"
    summary = "an artifact name containing a space is accepted (read as '_')"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        art = request.arg("artifact")
        if art and " " in art:
            request = request.with_query(artifact=art.replace(" ", "_"))
        body = obj(request)
        if isinstance(body.get("artifact"), str) and " " in body["artifact"]:
            request = request.with_json({**body, "artifact": body["artifact"].replace(" ", "_")})
        return upstream.send(request)


@mutant
class MistypedSizeCrashes(Mutant):
    """A write whose file size is not an integer crashes the server (500)."""

    name = "bad-input-string-size-gives-500"
    clause = "API-1.f"
    summary = "versions/write with a file size given as a string answers 500"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        files = obj(request).get("files") if request.endpoint == "versions/write" else None
        if isinstance(files, list) and any(
                isinstance(f, dict) and isinstance(f.get("size"), str) for f in files):
            return Response.error(500, "internal", "Internal server error.")
        return upstream.send(request)


@mutant
class NonObjectOpenCrashes(Mutant):
    """An open whose body is JSON but not an object crashes the server (500)."""

    name = "bad-input-open-array-body-gives-500"
    clause = "API-1.f"
    summary = "artifacts/open with a JSON array body answers 500"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.endpoint == "artifacts/open" and isinstance(request.json(), list):
            return Response.error(500, "internal", "Internal server error.")
        return upstream.send(request)


@mutant
class WarningsJoined(Mutant):
    """An open's warnings come as one string (joined by '; ') when there are any."""

    name = "shape-open-warnings-one-string"
    clause = "API-1.g"
    summary = "artifacts/open answers warnings as one joined string instead of a list"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(resp)
        if request.endpoint != "artifacts/open" or not resp.ok or not body.get("warnings"):
            return resp
        return resp.with_json({**body, "warnings": "; ".join(map(str, body["warnings"]))})


@mutant
class OpenWithoutArtifact(Mutant):
    """A successful open does not echo ``artifact``."""

    name = "shape-open-artifact-missing"
    clause = "API-1.g"
    summary = "artifacts/open answers without the artifact field"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(resp)
        if request.endpoint != "artifacts/open" or not resp.ok or "artifact" not in body:
            return resp
        return resp.with_json({k: v for k, v in body.items() if k != "artifact"})
