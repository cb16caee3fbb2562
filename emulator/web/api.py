"""`/api/v1`: the contract's endpoints. Each handler reads parameters and calls one rule."""

from __future__ import annotations

import json

from flask import Blueprint, Response, g, jsonify, request

from ..core import names
from ..core.errors import InvalidArgument, PayloadTooLarge
from ..rules.opening import open_artifact, read_artifact
from ..rules.retention import delete_version
from ..rules.usage import RawJSON, read_usage
from ..rules.versions import commit_version, list_versions, read_version, write_version
from .context import backend

bp = Blueprint("api", __name__, url_prefix="/api/v1")


def base_url() -> str:
    return backend().settings.public_url or request.host_url


def body(*fields: str) -> dict:
    """The JSON object of a request, read with a size limit; anything else is 400.

    Keys other than `fields` are refused: a typo such as `"resme"` must not silently turn a
    resume into a fresh start.
    """
    limit = backend().settings.max_json_bytes
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    # A browser sends a cross-site form or a Blob body without asking: only a JSON
    # Content-Type (which it never sends unasked) makes a body one of ours.
    mimetype = request.mimetype
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise InvalidArgument("Content-Type must be application/json, not "
                              f"{mimetype[:100] if mimetype else 'missing'}")
    raw = request.stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    try:
        data = json.loads(raw or b"null")
    except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
        raise InvalidArgument("request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidArgument("request body must be a JSON object")
    if b"\\ud" in raw.lower():  # only a \uD800-\uDFFF escape can carry a lone surrogate
        names.check_unicode(data)
    g.body = data  # for the call's log line, also when the call fails
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InvalidArgument(f"unknown field(s) {', '.join(map(repr, unknown))[:200]}; "
                              f"expected {', '.join(fields)}")
    return data


def query(*names_: str) -> None:
    """Refuse query parameters the operation does not know (and repeated ones)."""
    unknown = sorted(set(request.args) - set(names_))
    if unknown:
        raise InvalidArgument(f"unknown query parameter(s) {', '.join(map(repr, unknown))[:200]}"
                              f"; expected {', '.join(names_)}")
    repeated = [k for k in request.args if len(request.args.getlist(k)) > 1]
    if repeated:
        raise InvalidArgument(f"query parameter {repeated[0]!r} is given more than once")


def json_reply(obj: dict) -> Response:
    """A JSON reply whose top-level `RawJSON` values (text SQLite already made) are spliced
    in as they are; encoding tens of thousands of rows again would cost more than the call."""
    raw = {k: v for k, v in obj.items() if isinstance(v, RawJSON)}
    text = json.dumps({k: v for k, v in obj.items() if k not in raw})
    if raw:
        text = text[:-1] + "".join(f", {json.dumps(k)}: {v}" for k, v in raw.items()) + "}"
    return Response(text, mimetype="application/json")


def query_place() -> names.Place | None:
    """The reader's place; absent is unknown, but an empty or malformed one is an error."""
    return names.place_param(request.args.get("place"))


def query_flag(name: str) -> bool:
    value = request.args.get(name, "0").lower()
    if value not in ("0", "1", "true", "false"):
        raise InvalidArgument(f"{name} must be 0 or 1")
    return value in ("1", "true")


def _route_note(obj: dict | None, place: names.Place | None) -> str:
    if not obj:
        return ""
    loc = obj.get("location") or {}
    where = f"{loc.get('cloud')}/{loc.get('region')}"
    return f"{obj.get('route') or 'unknown'} {where} -> {place or 'unknown place'}"


@bp.post("/artifacts/open")
def artifacts_open() -> Response:
    query()
    data = body("artifact", "resume", "place", "holder")
    out = open_artifact(
        backend(),
        g.who,
        data.get("artifact"),
        data.get("resume"),
        data.get("place"),
        data.get("holder"),
        base_url(),
    )
    place = names.place(data.get("place"))  # well-formed: the open took it
    resumed = out["resume_from"]
    g.log = (
        f"{out['artifact']} {data.get('resume') or 'fresh'}",
        f"epoch {out['epoch']}"
        + (f" fenced {out['fenced']['holder']}" if out["fenced"] else "")
        + (f" from {resumed['version']} " + _route_note(resumed, place) if resumed else ""),
    )
    return jsonify(out)


@bp.post("/versions/write")
def versions_write() -> Response:
    query()
    data = body("artifact", "token", "version", "files", "upload")
    out = write_version(
        backend(),
        g.who,
        data.get("artifact"),
        data.get("token"),
        data.get("version"),
        data.get("files"),
        base_url(),
        data.get("upload"),
    )
    loc = out["location"]
    g.log = (
        f"{data.get('artifact')} {data.get('version')}",
        f"{out['route']} -> {loc['cloud']}/{loc['region']}",
    )
    return jsonify(out)


@bp.post("/versions/commit")
def versions_commit() -> Response:
    query()
    data = body("artifact", "token", "upload", "files")
    out = commit_version(backend(), g.who, data.get("artifact"), data.get("token"),
                         data.get("upload"), data.get("files"))
    g.log = (f"{out['artifact']} {out['version']}", f"epoch {out['epoch']}")
    return jsonify(out)


@bp.post("/versions/delete")
def versions_delete() -> Response:
    query()
    data = body("artifact", "token", "version")
    out = delete_version(backend(), g.who, data.get("artifact"), data.get("token"),
                         data.get("version"))
    g.log = (f"{out['artifact']} {out['version']}", "deleted")
    return jsonify(out)


@bp.get("/versions/read")
def versions_read() -> Response:
    query("artifact", "version", "urls", "place")
    place = query_place()
    urls = query_flag("urls")
    version = request.args.get("version", "latest")
    out = read_version(
        backend(), g.who, request.args.get("artifact"), version, place, base_url() if urls else None
    )
    g.log = (f"{out['artifact']} {version}", _route_note(out, place))
    return jsonify(out)


@bp.get("/versions/list")
def versions_list() -> Response:
    query("artifact", "place")
    out = list_versions(backend(), g.who, request.args.get("artifact"), query_place())
    count = len(out["versions"])
    g.log = (str(request.args.get("artifact")), f"{count} version{'' if count == 1 else 's'}")
    return jsonify(out)


@bp.get("/artifacts/read")
def artifacts_read() -> Response:
    query("artifact")
    out = read_artifact(backend(), g.who, request.args.get("artifact"))
    g.log = (out["artifact"], f"epoch {out['epoch']} latest {out['latest']}")
    return jsonify(out)


@bp.get("/usage/read")
def usage_read() -> Response:
    query("artifact")
    artifact = request.args.get("artifact")
    out = read_usage(backend(), g.who, artifact, raw_transfers=True)
    g.log = (artifact or "*", f"total ${out['total_cost_usd']:.4f}")
    return json_reply(out)
