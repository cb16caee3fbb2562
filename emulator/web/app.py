"""The Flask application factory."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from flask import Flask, Response, g, request

from ..rules.origins import Guard
from ..rules.upkeep import prepare_storage
from ..settings.config import Settings, settings_from
from ..settings.policy import Policy
from ..state.backend import Backend
from . import admin, api, api_document, dashboard, dataplane, error_bodies
from .context import apply_chaos

log = logging.getLogger("o41.emulator")


# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: anything a
# terminal or a log reader could take for a new line or an escape sequence.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\\]")


def escape_log(text: str) -> str:
    """Client-chosen text (holders, names, paths) as one inert line: controls become
    `\\xNN` / `\\uNNNN`, and a backslash is doubled so an escape cannot be forged."""

    def one(m: re.Match) -> str:
        ch = m.group()
        if ch == "\\":
            return "\\\\"
        return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"

    text = _CONTROL.sub(one, text)
    # A lone surrogate cannot be written to a UTF-8 log at all.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _subject_of_request() -> str:
    """Artifact and version of a call that failed before naming its subject."""
    data = g.get("body")
    if not isinstance(data, dict):
        data = request.args
    parts = [data.get("artifact"), data.get("version")]
    return " ".join(str(p) for p in parts if p is not None)


def create_app(config: Settings | Mapping | None = None, *, prepare: bool = True,
               policy: Policy | None = None) -> Flask:
    """Build an emulator app on `config` (Settings, or a mapping of Settings fields; an
    unknown name or a mistyped value is a ValueError).

    `prepare=False` skips the schema, the keys and bucket creation when a server's master
    process has done them already. `policy` says how the rules behave; by default the
    contract's, less the settings' deliberate `faults`.
    """
    settings = config if isinstance(config, Settings) else settings_from(config or {})
    backend = Backend(settings, prepared=not prepare, policy=policy)
    if prepare:
        prepare_storage(backend)
    app = Flask(__name__)
    app.extensions["o41"] = backend
    app.json.sort_keys = False
    app.register_blueprint(api.bp)
    app.register_blueprint(dataplane.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(dashboard.bp)
    app.register_blueprint(api_document.bp)
    error_bodies.register(app)
    guard = Guard(settings.allowed_hosts, settings.allowed_origins, settings.public_url)

    @app.before_request
    def _refuse_what_a_browser_did_not_mean() -> None:
        # First of all: a foreign Host (DNS rebinding) or another site's page changing state.
        guard.check_host(request.host)
        guard.check_origin(request.method, request.path, request.scheme, request.host,
                           request.headers.get("Origin"), request.headers.get("Sec-Fetch-Site"))

    @app.before_request
    def _authenticate_then_chaos() -> None:
        backend.heartbeat()
        path = request.path
        if path.startswith("/api/v1/") and path != "/api/v1/openapi.json":
            # Every /api/v1 call, known route or not, needs a valid key first (AUTH-1). Chaos
            # rules come after it, so a keyless call (another site's <img>) uses up no rule;
            # the data plane applies them once a URL's signature checked out (dataplane.py).
            g.who = backend.authenticate(request.headers.get("Authorization"))
            apply_chaos(backend, path.removeprefix("/api/v1/"))

    @app.teardown_request
    def _release_connection(_exc: BaseException | None) -> None:
        backend.release()

    @app.after_request
    def _log_line(response: Response) -> Response:
        # One line per call: operation, subject -> status, outcome. Keys are never logged.
        if request.path.startswith("/api/v1/"):
            op = request.path.removeprefix("/api/v1/")
        elif request.path.startswith("/data/"):  # the subject names artifact and version
            op = f"{request.method} data"
        else:  # the admin endpoints and the pages, each by its path
            op = f"{request.method} {request.path}"
        subject, outcome = g.get("log", None) or (_subject_of_request(), "")
        if response.status_code >= 400 and response.is_json:
            outcome = (response.get_json(silent=True) or {}).get("error", {}).get("code", "")
        words = [op, subject, "->", str(response.status_code), outcome]
        log.info("%s", " ".join(escape_log(w) for w in words if w))
        return response

    return app
