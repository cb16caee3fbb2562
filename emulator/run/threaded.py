"""The emulator served from a thread of the calling process, like moto's `ThreadedMotoServer`.

    with ThreadedEmulator() as emu:                      # 127.0.0.1, a free port
        requests.get(emu.api_url + "/versions/list", params=..., headers=emu.auth)
        emu.reset()                                      # forget every artifact

The whole app (API, signed-URL data plane, admin endpoints, dashboard) runs in werkzeug's
threaded server: one thread per connection, no subprocess, no gunicorn. It is what a
project's own tests want (the `o41_emulator` fixture, `emulator.run.pytest_fixture`); a
subprocess (`emulator.run.served`) is for tests of the server itself.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from ..core.keys import new_key
from ..rules.upkeep import reset as reset_backend
from ..settings.config import KeySpec, Settings, settings_from
from ..state.backend import Backend
from ..web.app import create_app


class _Handler(WSGIRequestHandler):
    """One connection (keep-alive: many requests), in a thread of its own that ends with it."""

    server: _Server

    def handle(self) -> None:
        with self.server.lock:
            self.server.connections.add(self.connection)
        try:
            super().handle()
        finally:
            with self.server.lock:
                self.server.connections.discard(self.connection)
            # The thread ends here: its database connection would outlive it, one per
            # connection ever served.
            self.server.app.extensions["o41"].end_thread()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """No line per request on the test run's stderr (werkzeug would add a handler to
        its logger for them)."""


class _Server(ThreadedWSGIServer):
    """werkzeug's threaded server, knowing its open connections: `stop()` hangs up on the
    idle keep-alive ones, whose threads would otherwise serve them on a closed database."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()
        self.connections: set[socket.socket] = set()

    def hang_up(self) -> None:
        with self.lock:
            open_now = list(self.connections)
        for conn in open_now:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed meanwhile
                pass


def _writer_key(settings: Settings) -> tuple[Settings, str]:
    """A key of the settings that may write every artifact, or the settings with one added."""
    for spec in settings.keys:
        if ("", "write") in spec.scopes:
            return settings, spec.key
    key = new_key()
    return replace(settings, keys=(*settings.keys, KeySpec(key, (("", "write"),)))), key


class ThreadedEmulator:
    """One emulator served from a daemon thread; keyword arguments are `Settings` fields
    (`faults=["no-fencing"]`, `url_lifetime=60`, `data_dir=...`). Without `data_dir` it
    keeps its data in a temporary folder removed by `stop()`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **settings: Any) -> None:
        self.host, self.port = host, port
        self._given = settings
        self._temporary: Path | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._backend: Backend | None = None
        self.settings: Settings | None = None
        self.url = self.key = ""

    @property
    def api_url(self) -> str:
        return self.url + "/api/v1"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> ThreadedEmulator:
        if self._server is not None:
            raise RuntimeError("this emulator is started already")
        values = dict(self._given)
        if values.get("data_dir") is None:
            self._temporary = Path(tempfile.mkdtemp(prefix="o41-emulator-"))
            values["data_dir"] = self._temporary
        try:
            settings, self.key = _writer_key(settings_from(values))
            app = create_app(settings)
            self._backend = app.extensions["o41"]
            self._server = _Server(self.host, self.port, app, handler=_Handler)
        except BaseException:
            self._close()
            raise
        self.settings = settings
        host = self.host if ":" not in self.host else f"[{self.host}]"
        self.url = f"http://{host}:{self._server.server_port}"
        # poll_interval: how long stop() may wait for the loop to notice it should end.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name=f"o41-emulator {self.url}", daemon=True)
        self._thread.start()
        return self

    def reset(self) -> dict:
        """Forget every artifact, version, upload and transfer (keys stay): what
        `POST /_emulator/reset` does, without a request."""
        if self._backend is None:
            raise RuntimeError("the emulator is not started")
        try:
            return reset_backend(self._backend)
        finally:
            self._backend.end_thread()

    def clear_chaos(self) -> None:
        """Remove every chaos rule (what `DELETE /_emulator/chaos` does); a reset keeps them."""
        if self._backend is None:
            raise RuntimeError("the emulator is not started")
        try:
            self._backend.chaos.store(self._backend.conn(), [])
        finally:
            self._backend.end_thread()

    def stop(self) -> None:
        """Stop serving, close the database, remove a temporary data dir. Idempotent."""
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._server.hang_up()
        self._thread = None
        self._close()

    def _close(self) -> None:
        if self._server is not None:
            self._server.server_close()
            self._server = None
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def __enter__(self) -> ThreadedEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ThreadedEmulator({self.url or 'not started'})"
