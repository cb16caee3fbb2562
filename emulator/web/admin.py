"""`/_emulator/`: emulator-only endpoints (health, reset, keys, state), not part of /api/v1."""

from __future__ import annotations

import hmac
from dataclasses import asdict

from flask import Blueprint, Response, current_app, jsonify, request

from .. import db, keys
from ..backend import Backend
from ..chaos import parse_rules
from ..errors import Forbidden, InvalidArgument, Unauthenticated
from .api import body

bp = Blueprint("admin", __name__, url_prefix="/_emulator")


def backend() -> Backend:
    return current_app.extensions["o41"]


@bp.before_request
def _require_admin() -> None:
    admin_key = backend().settings.admin_key
    if not admin_key or request.endpoint == "admin.health":
        return
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise Unauthenticated("admin endpoints need Authorization: Bearer <admin key>")
    if not hmac.compare_digest(given.strip().encode(), admin_key.encode()):
        raise Forbidden("not the admin key")


@bp.get("/health")
def health() -> Response:
    backend().conn().execute("SELECT 1").fetchone()
    return jsonify({"status": "ok", "faults": sorted(backend().faults)})


@bp.post("/reset")
def reset() -> Response:
    backend().reset()
    return jsonify({"reset": True})


@bp.post("/keys")
def create_key() -> tuple[Response, int]:
    data = body("key", "scopes")
    key = data.get("key") or keys.new_key()
    if not isinstance(key, str) or not key.startswith("ak_") or len(key) > 200:
        raise InvalidArgument("key must be a string starting with 'ak_'")
    scopes = keys.parse_scopes(data.get("scopes"))
    conn = backend().conn()
    with db.transaction(conn):
        existing = keys.scopes_of(conn, key)
        # Anyone who can reach an open emulator may add keys, but turning a read-only key
        # into a writer is an escalation: it needs the admin key (checked in
        # _require_admin), so it is refused when none was configured.
        stored = tuple(sorted(dict(scopes).items()))  # one access per prefix, last wins
        if existing not in (None, stored) and not backend().settings.admin_key:
            raise Forbidden(
                "this key exists already; changing its scopes needs the admin key "
                "(start the emulator with --admin-key)"
            )
        keys.store(conn, key, scopes)
    return jsonify({"key": key, "scopes": keys.Principal(scopes).json()}), 201


@bp.route("/chaos", methods=["GET", "POST", "DELETE"])
def chaos() -> Response:
    """GET the rules, POST `{"rules": [...]}` to replace them, DELETE to clear them."""
    be = backend()
    if request.method == "POST":
        be.chaos.store(be.conn(), parse_rules(body("rules").get("rules")))
    elif request.method == "DELETE":
        be.chaos.store(be.conn(), [])
    return jsonify({"rules": [asdict(r) for r in be.chaos.rules(be.conn())]})


@bp.get("/state")
def state() -> Response:
    be = backend()
    conn = be.conn()
    artifacts = []
    for row in conn.execute("SELECT * FROM artifacts ORDER BY name"):
        versions = conn.execute(
            "SELECT version, location, size, epoch, holder, placement FROM versions "
            "WHERE artifact = ? ORDER BY step",
            (row["name"],),
        ).fetchall()
        artifacts.append({**dict(row), "versions": [dict(v) for v in versions]})
    open_uploads = conn.execute("SELECT COUNT(*) FROM uploads WHERE state = 'open'").fetchone()[0]
    return jsonify(
        {
            "artifacts": artifacts,
            "open_uploads": open_uploads,
            "locations": [
                {
                    **loc.json(),
                    "bucket": loc.bucket,
                    "default": loc is be.geography.defaults.get(loc.cloud),
                }
                for loc in be.geography.locations.values()
            ],
            "fallback": be.geography.fallback.json(),
            "faults": sorted(be.faults),
        }
    )
