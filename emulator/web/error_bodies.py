"""The one place that turns errors into the contract's JSON error body."""

from __future__ import annotations

import logging

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from ..core.errors import ApiError
from ..state.outages import as_unavailable
from ..storage import StorageUnavailable

log = logging.getLogger("o41.emulator")

# Framework errors (no route, wrong method, body too big) mapped onto the contract's codes.
_HTTP_CODES = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "invalid_argument",
    413: "payload_too_large",
    416: "range_not_satisfiable",
}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    resp = jsonify({"error": {"code": code, "message": message}})
    resp.status_code = status
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def register(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> Response:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        code = _HTTP_CODES.get(status, "internal")
        return error_response(status, code, exc.description or exc.name)

    @app.errorhandler(TimeoutError)
    def _stalled(exc: TimeoutError) -> Response:
        # The server's socket timeout (`read_timeout`): the client stopped sending mid-request.
        # Whatever it had sent is discarded; the connection is closed after this reply.
        limit = current_app.extensions["o41"].settings.read_timeout
        return error_response(
            400, "invalid_argument", f"the request stalled: no byte arrived for {limit:g} s"
        )

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        unavailable = as_unavailable(exc)
        if unavailable is not None:
            # The connection may be broken or in a failed transaction: the next request
            # opens a fresh one.
            current_app.extensions["o41"].discard_connection()
            cause = exc.__cause__ if isinstance(exc, StorageUnavailable) else None
            log.warning("%s unavailable on %s %s: %s",
                        "storage" if cause is not None else "database", request.method,
                        request.path, type(cause or getattr(exc, "orig", None) or exc).__name__)
            return _api_error(unavailable)
        log.exception("unexpected error on %s %s", request.method, request.path)
        return error_response(500, "internal", f"internal error: {type(exc).__name__}")

