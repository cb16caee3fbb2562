"""The OpenAPI 3.1 document of `/api/v1`, served at `/api/v1/openapi.json`.

Built from the code's own tables (error classes, routes, name patterns) so that an error code
or a route added there shows up here; `tests/emulator/test_openapi.py` validates every
response of the hop scenario against it, so a field added to a reply without documenting it
fails a test.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .. import __version__
from ..core.errors import ALL_ERRORS
from ..core.locations import ROUTES
from ..core.names import PLACE_PART, SEGMENT, VERSION

SCHEMAS = "#/components/schemas/"
JSON = "application/json"


def ref(name: str) -> dict:
    return {"$ref": SCHEMAS + name}


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None, **extra: Any) -> dict:
    """A closed object schema: these properties and no others."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
        **extra,
    }


def nullable(schema: dict) -> dict:
    return {"oneOf": [schema, {"type": "null"}]}


INT = {"type": "integer", "minimum": 0}
STR = {"type": "string"}
TIME = {"type": "string", "format": "date-time"}
USD = {"type": "number", "minimum": 0}
URL = {"type": "string", "format": "uri"}
PLACE_PART_SCHEMA = {"type": "string", "pattern": f"^{PLACE_PART}$"}
PLACE_TEXT = {"type": "string", "pattern": f"^{PLACE_PART}/{PLACE_PART}$"}

SCHEMA_DEFS: dict[str, dict] = {
    "ArtifactName": {
        "type": "string",
        "pattern": f"^{SEGMENT}/{SEGMENT}$",
        "examples": ["experiments/run-1234"],
    },
    "VersionName": {"type": "string", "pattern": f"^{VERSION}$", "examples": ["step-00000300"]},
    "Sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "Route": {"type": "string", "enum": list(ROUTES)},
    "Place": obj({"cloud": STR, "region": STR}, description="Where a box runs or a bucket is."),
    "PlaceInput": {
        "type": "object",
        "properties": {"cloud": PLACE_PART_SCHEMA, "region": PLACE_PART_SCHEMA},
        "required": ["cloud", "region"],
        "description": "Where the box runs; cloud compared case-insensitively.",
    },
    "FileDeclaration": obj({"name": STR, "size": INT, "sha256": ref("Sha256")}),
    "StreamedFile": obj({"name": STR}, description="A file declared by name alone (VER-6): "
                        "its PUT answers the size and sha256 received; the commit lists them."),
    "VersionFile": obj({"name": STR, "size": INT, "sha256": ref("Sha256")}, {"url": URL}),
    "SignedFile": obj({"name": STR, "url": URL}),
    "Version": obj(
        {
            "artifact": ref("ArtifactName"),
            "version": ref("VersionName"),
            "step": INT,
            "location": ref("Place"),
            "size": INT,
            "created_at": TIME,
            "epoch": {"type": "integer", "minimum": 1},
            "holder": STR,
            "route": nullable(ref("Route")),
            "cross_cloud": {"type": ["boolean", "null"]},
        },
        {
            "files": {"type": "array", "items": ref("VersionFile")},
            "urls_expire_at": TIME,
        },
        description="A committed checkpoint; route and cross_cloud are relative to the "
        "reader's place and null when no place is known. `files` is left out of lists.",
    ),
    "OpenRequest": obj(
        {"artifact": ref("ArtifactName")},
        {
            "resume": {
                "oneOf": [
                    {"const": "latest"},
                    {"type": "string", "pattern": f"^o41://{SEGMENT}/{SEGMENT}/{VERSION}$"},
                    {"type": "null"},
                ],
                "description": "latest, a checkpoint URI to fork from, or null for fresh",
            },
            "place": {"oneOf": [ref("PlaceInput"), {"type": "null"}]},
            "holder": {"type": "string", "minLength": 1, "maxLength": 256},
        },
    ),
    "OpenResponse": obj(
        {
            "artifact": ref("ArtifactName"),
            "epoch": {"type": "integer", "minimum": 1},
            "token": STR,
            "holder": STR,
            "fenced": nullable(obj({"epoch": INT, "holder": STR})),
            "resume_from": nullable(ref("Version")),
            "write_location": obj({"cloud": STR, "region": STR, "route": ref("Route")}),
            "warnings": {"type": "array", "items": STR},
        }
    ),
    "WriteRequest": obj(
        {
            "artifact": ref("ArtifactName"),
            "token": STR,
            "version": ref("VersionName"),
            "files": {"type": "array", "items": {
                "oneOf": [ref("FileDeclaration"), ref("StreamedFile")]}},
        },
        {"upload": {"type": "string", "minLength": 1,
                    "description": "an open upload of this version: the files join it (VER-5)"}},
    ),
    "WriteResponse": obj(
        {
            "upload": STR,
            "location": ref("Place"),
            "route": ref("Route"),
            "files": {"type": "array", "items": ref("SignedFile")},
            "expires_at": TIME,
        },
        description="Signed PUT URLs, one per declared file, in the writer's location.",
    ),
    "CommitRequest": obj(
        {"artifact": ref("ArtifactName"), "token": STR, "upload": STR},
        {"files": {"type": "array", "items": ref("FileDeclaration"),
                   "description": "every streamed file with what its writer wrote (VER-6)"}},
    ),
    "DeleteRequest": obj(
        {"artifact": ref("ArtifactName"), "token": STR, "version": ref("VersionName")}),
    "Deleted": obj(
        {"artifact": ref("ArtifactName"), "version": ref("VersionName"), "deleted_at": TIME},
        description="The version left read, list and placements; URLs given out before "
        "keep serving until they expire (VER-7)."),
    "VersionList": obj({"versions": {"type": "array", "items": ref("Version")}}),
    "Artifact": obj(
        {
            "artifact": ref("ArtifactName"),
            "epoch": INT,
            "holder": {"type": ["string", "null"]},
            "latest": nullable(ref("VersionName")),
            "versions": INT,
            "forked_from": nullable(
                obj({"artifact": ref("ArtifactName"), "version": ref("VersionName")})
            ),
            "created_at": TIME,
        }
    ),
    "RouteUsage": obj({"write_bytes": INT, "read_bytes": INT, "cost_usd": USD}),
    "Transfer": obj(
        {
            "direction": {"enum": ["write", "read"]},
            "artifact": ref("ArtifactName"),
            "version": ref("VersionName"),
            "location": ref("Place"),
            "place": nullable(ref("Place")),
            "route": ref("Route"),
            "bytes": INT,
            "cost_usd": USD,
        },
        description="All bytes of one direction, artifact, version, place and route.",
    ),
    "Placement": obj(
        {
            "kind": {"enum": ["default", "fallback"]},
            "place": nullable(ref("Place")),
            "location": ref("Place"),
            "route": ref("Route"),
            "versions": INT,
            "bytes": INT,
        },
        {"artifact": ref("ArtifactName")},
        description="Versions written away from their box's region (PLACE-2, PLACE-3).",
    ),
    "Usage": obj(
        {
            "routes": obj({r: ref("RouteUsage") for r in ROUTES}),
            "total_cost_usd": USD,
            "transfers": {"type": "array", "items": ref("Transfer")},
            "placements": {"type": "array", "items": ref("Placement")},
            "prices": obj(
                {
                    "inter_region": {"type": "object", "additionalProperties": USD},
                    "cross_cloud": {"type": "object", "additionalProperties": USD},
                },
                description="USD per GB (10^9 bytes), by the cloud the bytes leave.",
            ),
        }
    ),
}


def _error_responses() -> dict[str, dict]:
    """One response per error status, its `code` limited to the codes of that status."""
    codes: dict[int, list[str]] = defaultdict(list)
    for err in ALL_ERRORS:
        codes[err.status].append(err.code)
    out = {}
    for status, names in sorted(codes.items()):
        schema = obj(
            {"error": obj({"code": {"enum": names}, "message": {"type": "string", "minLength": 1}})}
        )
        out[str(status)] = {
            "description": ", ".join(f"`{n}`" for n in names),
            "content": {JSON: {"schema": schema}},
        }
    return out


def _op(summary: str, ok: str, errors: list[int], *, body: str | None = None,
        params: list[str] | None = None, rules: str = "") -> dict:
    responses: dict[str, dict] = {
        "200": {"description": "OK", "content": {JSON: {"schema": ref(ok)}}}
    }
    for status in sorted({401, *errors}):
        responses[str(status)] = {"$ref": f"#/components/responses/{status}"}
    op: dict[str, Any] = {
        "summary": summary,
        "operationId": summary.split(":")[0].replace(" ", "_").lower(),
        "responses": responses,
    }
    if rules:
        op["description"] = f"Rules: {rules}."
    if body:
        op["requestBody"] = {"required": True, "content": {JSON: {"schema": ref(body)}}}
    if params:
        op["parameters"] = [{"$ref": f"#/components/parameters/{p}"} for p in params]
    return op


def _param(name: str, schema: dict, description: str, required: bool = False) -> dict:
    return {"name": name, "in": "query", "required": required, "schema": schema,
            "description": description}


PARAMETERS = {
    "artifact": _param("artifact", ref("ArtifactName"), "project/name", required=True),
    "optionalArtifact": _param("artifact", ref("ArtifactName"), "only this artifact"),
    "version": _param("version", {"oneOf": [{"const": "latest"}, ref("VersionName")]},
                      "latest (default) or step-XXXXXXXX"),
    "urls": _param("urls", {"enum": ["0", "1", "true", "false"]},
                   "1: sign a GET URL for each file"),
    "place": _param("place", PLACE_TEXT,
                    "the reader's cloud/region; sets route and cross_cloud"),
}


def document() -> dict:
    """The whole OpenAPI 3.1 document as a JSON-ready dict."""
    errors = _error_responses()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "o41 Artifacts API (emulator)",
            "version": __version__,
            "description": "Checkpoint artifacts with fencing epochs, versions, signed URLs "
            "and usage by route. Signed URLs point at the emulator's data plane, outside "
            "this base path; they take no header.",
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "paths": {
            "/artifacts/open": {"post": _op(
                "Open an artifact: resume latest, start fresh or fork", "OpenResponse",
                [400, 403, 404, 409, 413], body="OpenRequest",
                rules="AUTH-2, OPEN-1..3, FORK-1..2, FENCE-1..4, PLACE-1..3")},
            "/versions/write": {"post": _op(
                "Write a version: reserve an upload and sign PUT URLs", "WriteResponse",
                [400, 403, 404, 409, 413], body="WriteRequest",
                rules="FENCE-2, VER-1..3, VER-5..6, PLACE-1..4")},
            "/versions/commit": {"post": _op(
                "Commit a version: make an upload visible", "Version",
                [400, 403, 404, 409, 413], body="CommitRequest",
                rules="FENCE-2..3, VER-2..6")},
            "/versions/delete": {"post": _op(
                "Delete a version that is not the latest", "Deleted",
                [400, 403, 404, 409, 413], body="DeleteRequest", rules="FENCE-2, VER-7")},
            "/versions/read": {"get": _op(
                "Read a version, optionally with signed GET URLs", "Version",
                [400, 403, 404], params=["artifact", "version", "urls", "place"],
                rules="READ-1..4, XC-1")},
            "/versions/list": {"get": _op(
                "List versions in step order, without files", "VersionList",
                [400, 403, 404], params=["artifact", "place"])},
            "/artifacts/read": {"get": _op(
                "Read an artifact: epoch, holder, latest, fork origin", "Artifact",
                [400, 403, 404], params=["artifact"])},
            "/usage/read": {"get": _op(
                "Read usage: bytes and cost by route, transfers, fallback placements", "Usage",
                [400, 403, 404], params=["optionalArtifact"], rules="USAGE-1")},
            "/openapi.json": {"get": {
                "summary": "This document",
                "operationId": "openapi",
                "security": [],
                "responses": {"200": {"description": "OpenAPI 3.1",
                                      "content": {JSON: {"schema": {"type": "object"}}}}},
            }},
        },
        "components": {
            "securitySchemes": {"bearer": {
                "type": "http", "scheme": "bearer",
                "description": "An API key, `ak_...` (O41_ARTIFACTS_API_KEY)."}},
            "schemas": SCHEMA_DEFS,
            "parameters": PARAMETERS,
            "responses": errors,
        },
    }
