"""Mutants of reply shapes (API-1, READ-1.c, FENCE-2.f): each keeps every rule of the
"Rules" table but bends one sentence of the HTTP API section, as a careless serializer
would. One row each (rows.py); the made-up holder's two are in m_words."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.m_read import obj
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import body
from conformance.mutants.rows import dropped
from conformance.mutants.rows import headers
from conformance.mutants.rows import internal_error
from conformance.mutants.rows import rows
from conformance.mutants.rows import set_fields
from conformance.mutants.rows import versions

Json = dict[str, Any]
#: Every reply that carries Version objects.
WITH_VERSIONS = ("versions/read", "versions/list", "versions/commit", "artifacts/open")


def _step_mod_10000(version: Json) -> Json:
    step = version.get("step")
    return {**version, "step": step % 10_000} if isinstance(step, int) else version


def _size_of_first_file(version: Json) -> Json:
    files = version.get("files") or []
    if len(files) < 2 or not isinstance(files[0], dict):
        return version
    return {**version, "size": files[0].get("size")}


def _listed(change: Any) -> Any:
    """A versions/list reply with ``change`` applied to its list of versions (if any)."""
    return body(lambda reply: {**reply, "versions": change(reply["versions"])}
                if reply.get("versions") else None)


def _holder_of_last(listed: list[Any]) -> list[Any]:
    last = listed[-1]
    return [{**v, "holder": last.get("holder"), "epoch": last.get("epoch")} for v in listed]


def _when_none(field: str, value: Any) -> Any:
    return body(lambda reply: {**reply, field: value} if reply.get(field) is None else None)


def _code_as_message(reply: Json) -> Json:
    code = str(reply["error"]["code"])
    return {"error": {"code": code, "message": code}}


def _space_as_underscore(request: Request) -> Request:
    art = request.arg("artifact")
    if art and " " in art:
        request = request.with_query(artifact=art.replace(" ", "_"))
    sent = obj(request)
    if isinstance(sent.get("artifact"), str) and " " in sent["artifact"]:
        request = request.with_json({**sent, "artifact": sent["artifact"].replace(" ", "_")})
    return request


def _size_given_as_string(request: Request) -> bool:
    files = obj(request).get("files")
    return isinstance(files, list) and any(
        isinstance(f, dict) and isinstance(f.get("size"), str) for f in files)


rows(
    Row("shape-step-wraps-above-9999", "API-1.b",
        "a Version's step is its number modulo 10000 once it reaches 10000",
        On(WITH_VERSIONS), answer=versions(_step_mod_10000)),
    Row("shape-size-is-first-file", "API-1.b",
        "a Version's size is its first file's size, not the sum of its files",
        On(("versions/read", "versions/commit")), answer=versions(_size_of_first_file)),
    Row("shape-created-at-not-a-timestamp", "API-1.b",
        "versions/read answers created_at as a plain string that is no time",
        On(("versions/read",)), answer=versions(lambda v: {**v, "created_at": "committed"})),
    Row("shape-list-entries-carry-files", "READ-1.c",
        "versions/list gives each Version a files field (an empty list)",
        On(("versions/list",)),
        answer=_listed(lambda vs: [{**v, "files": []} if isinstance(v, dict) else v
                                   for v in vs])),
    Row("shape-list-holder-is-newest-open", "READ-1.c",
        "versions/list gives every Version the holder of the last one listed",
        On(("versions/list",)), answer=_listed(_holder_of_last)),
    Row("shape-urls-expire-at-missing", "API-1.c",
        "versions/read with urls=1 leaves out urls_expire_at",
        On(("versions/read",)),
        answer=versions(lambda v: {k: x for k, x in v.items() if k != "urls_expire_at"})),
    Row("shape-urls-0-gives-urls", "API-1.c", "versions/read with urls=0 answers as if urls=1",
        On(("versions/read",), when=lambda r: r.arg("urls") == "0"),
        ask=lambda r: r.with_query(urls="1")),
    Row("shape-write-route-always-local", "API-1.d",
        "versions/write answers route local even when the write location is away",
        On(("versions/write",)), answer=set_fields(route="local")),
    Row("shape-write-expires-at-missing", "API-1.d", "versions/write leaves out expires_at",
        On(("versions/write",)), answer=dropped("expires_at")),
    Row("shape-artifact-latest-empty-string", "API-1.e",
        'artifacts/read answers latest "" (not null) while there is no version',
        On(("artifacts/read",)), answer=_when_none("latest", "")),
    Row("shape-artifact-forked-from-empty-object", "API-1.e",
        "artifacts/read answers forked_from {} (not null) for an artifact never forked",
        On(("artifacts/read",)), answer=_when_none("forked_from", {})),
    Row("error-message-is-the-code", "API-1.a",
        "error replies carry message equal to the code (e.g. 'not_found')",
        On(replies="error"), answer=body(_code_as_message)),
    Row("error-content-type-text-plain", "API-1.a",
        "API errors keep their JSON body but say Content-Type text/plain",
        On(replies="error"), answer=headers(Content_Type="text/plain; charset=utf-8")),
    Row("bad-input-space-in-artifact-name-accepted", "API-1.f",
        "an artifact name containing a space is accepted (read as '_')",
        On(kind="any"), ask=_space_as_underscore),
    Row("bad-input-string-size-gives-500", "API-1.f",
        "versions/write with a file size given as a string answers 500",
        On(("versions/write",), when=_size_given_as_string), instead=internal_error()),
    Row("bad-input-open-array-body-gives-500", "API-1.f",
        "artifacts/open with a JSON array body answers 500",
        On(("artifacts/open",), when=lambda r: isinstance(r.json(), list)),
        instead=internal_error()),
    Row("shape-open-warnings-one-string", "API-1.g",
        "artifacts/open answers warnings as one joined string instead of a list",
        On(("artifacts/open",)),
        answer=body(lambda reply: {**reply, "warnings": "; ".join(map(str, reply["warnings"]))}
                    if reply.get("warnings") else None)),
    Row("shape-open-artifact-missing", "API-1.g",
        "artifacts/open answers without the artifact field",
        On(("artifacts/open",)), answer=dropped("artifact")),
)

