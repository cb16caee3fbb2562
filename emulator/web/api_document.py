"""`GET /api/v1/openapi.json`: the API's OpenAPI 3.1 document, served without a key."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..rules import openapi

bp = Blueprint("openapi", __name__, url_prefix="/api/v1")


@bp.get("/openapi.json")
def document() -> Response:
    return jsonify(openapi.document())
