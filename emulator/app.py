"""The Flask application factory."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from flask import Flask, Response, g, request

from .backend import Backend
from .config import Settings
from .web import admin, api, dataplane, errors

log = logging.getLogger("o41.emulator")


def _settings(config: Settings | Mapping | None) -> Settings:
    if isinstance(config, Settings):
        return config
    values = dict(config or {})
    data_dir = values.pop("data_dir", None) or tempfile.mkdtemp(prefix="o41-emulator-")
    return replace(Settings(data_dir=Path(data_dir)), **values)


def create_app(config: Settings | Mapping | None = None, *, prepare: bool = True) -> Flask:
    """Build an emulator app on `config` (Settings, or a mapping of Settings fields).

    `prepare=False` skips bucket creation when a server's master process has done it already.
    """
    settings = _settings(config)
    backend = Backend(settings)
    if prepare:
        backend.prepare_storage()
    app = Flask(__name__)
    app.extensions["o41"] = backend
    app.json.sort_keys = False
    app.register_blueprint(api.bp)
    app.register_blueprint(dataplane.bp)
    app.register_blueprint(admin.bp)
    errors.register(app)

    @app.before_request
    def _authenticate() -> None:
        # Every /api/v1 call, known route or not, needs a valid key first (AUTH-1).
        if request.path.startswith("/api/v1/") and request.path != "/api/v1/openapi.json":
            g.who = backend.authenticate(request.headers.get("Authorization"))

    @app.after_request
    def _log_line(response: Response) -> Response:
        # One line per call: operation, subject -> status, outcome. Keys are never logged.
        if request.path.startswith("/api/v1/"):
            op = request.path.removeprefix("/api/v1/")
        else:
            op = f"{request.method} {request.path.split('/')[1]}"
        subject, outcome = g.get("log", ("", ""))
        if response.status_code >= 400 and response.is_json:
            outcome = (response.get_json(silent=True) or {}).get("error", {}).get("code", "")
        log.info("%s %s -> %d %s", op, subject, response.status_code, outcome)
        return response

    return app
