"""`/_emulator/`: emulator-only endpoints (health, reset, keys, chaos, state), not /api/v1."""

from __future__ import annotations

from dataclasses import asdict

from flask import Blueprint, Response, jsonify, request

from ..core.errors import Forbidden, Unauthenticated
from ..rules import upkeep
from ..state.chaos import parse_rules
from .api import body
from .context import backend, is_admin_key, presented_admin_key

bp = Blueprint("admin", __name__, url_prefix="/_emulator")


@bp.before_request
def _require_admin() -> None:
    if request.endpoint == "admin.health":
        return
    given = presented_admin_key()
    if is_admin_key(given):
        return
    if not given:
        raise Unauthenticated("admin endpoints need Authorization: Bearer <admin key>")
    raise Forbidden("not the admin key")


@bp.get("/health")
def health() -> Response:
    return jsonify(upkeep.health(backend()))


@bp.post("/reset")
def reset() -> Response:
    return jsonify(upkeep.reset(backend()))


@bp.post("/keys")
def create_key() -> tuple[Response, int]:
    data = body("key", "scopes")
    return jsonify(upkeep.add_key(backend(), data.get("key"), data.get("scopes"))), 201


@bp.delete("/keys")
def revoke_key() -> Response:
    """Revoke a minted key: `{"key"}`; from then on it is 401 on every node."""
    return jsonify(upkeep.revoke_key(backend(), body("key").get("key")))


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
    return jsonify(upkeep.state(backend()))
