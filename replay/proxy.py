"""A recording reverse proxy in front of the API: each box talks to ``/box/<id>/api/v1``.

The proxy forwards every call unchanged (signed URLs in replies still point at the service,
so the data plane is not proxied) and records who called what and what came back. That log
is how the harness counts a box's checkpoints, and how the checks attribute opens, writes and
commits to boxes whose holder ids are the same (SkyPilot keeps the task id across
recoveries).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

FORWARDED_HEADERS = ("Authorization", "Content-Type", "Accept")


@dataclass(frozen=True)
class Call:
    """One API call of one box, with its request and reply bodies."""

    box: str
    op: str
    started: float
    ended: float
    status: int
    request: dict[str, Any]
    reply: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status < 400

    @property
    def code(self) -> str | None:
        """The contract error code of a failed call."""
        err = self.reply.get("error")
        return err.get("code") if isinstance(err, dict) else None


class Recorder:
    """The call log, with a condition the runner waits on for checkpoint counts."""

    def __init__(self, hook: Callable[[Call], None] | None = None) -> None:
        self.calls: list[Call] = []
        self.changed = threading.Condition()
        self.hook = hook

    def add(self, call: Call) -> None:
        """Record a call, then run the hook before the box gets its reply.

        The runner preempts from the hook, so "after N checkpoints" is exact: the box is
        stopped or killed once its Nth commit is durable and before it hears so.
        """
        with self.changed:
            self.calls.append(call)
            self.changed.notify_all()
        if self.hook is not None:
            self.hook(call)

    def snapshot(self) -> list[Call]:
        with self.changed:
            return list(self.calls)

    def checkpoints(self, box: str) -> int:
        """Successful commits of ``box`` so far."""
        return sum(1 for c in self.snapshot() if c.box == box and c.op == "commit" and c.ok)

    def calls_of(self, box: str) -> int:
        """API calls of ``box`` so far, of any kind."""
        return sum(1 for c in self.snapshot() if c.box == box)

    def wait(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)


def _op(path: str) -> str:
    """``/api/v1/versions/commit`` -> ``commit``; ``/api/v1/artifacts/open`` -> ``open``."""
    tail = path.split("/api/v1/", 1)[-1].strip("/")
    return {"artifacts/open": "open", "versions/write": "write", "versions/commit": "commit",
            "versions/delete": "delete", "versions/read": "read_version", "versions/list": "list",
            "artifacts/read": "read_artifact", "usage/read": "usage"}.get(tail, tail)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A box killed mid-request resets its connection: that is the point, not an error."""


class RecordingProxy:
    """A threaded HTTP server forwarding ``/box/<id>/<path>`` to ``<upstream>/<path>``."""

    def __init__(self, upstream: str, recorder: Recorder) -> None:
        self.upstream = upstream.rstrip("/")
        self.recorder = recorder
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def api_url(self, box: str) -> str:
        """The ``O41_ARTIFACTS_API_URL`` that box ``box`` is given."""
        return f"{self.url}/box/{box}/api/v1"

    def __enter__(self) -> RecordingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self
        local = threading.local()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                """Quiet: the recorder is the log."""

            def _forward(self) -> None:
                parts = urlsplit(self.path)
                segments = parts.path.split("/", 3)
                if len(segments) < 4 or segments[1] != "box":
                    self._reply(404, b'{"error": {"code": "not_found", "message": "no box"}}',
                                "application/json")
                    return
                box, rest = segments[2], "/" + segments[3]
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {h: self.headers[h] for h in FORWARDED_HEADERS if h in self.headers}
                session = getattr(local, "session", None) or requests.Session()
                local.session = session
                started = time.monotonic()
                query = f"?{parts.query}" if parts.query else ""
                try:
                    resp = session.request(self.command, proxy.upstream + rest + query,
                                           data=body, headers=headers, timeout=60)
                    status, data = resp.status_code, resp.content
                    ctype = resp.headers.get("Content-Type", "application/json")
                except requests.RequestException as exc:
                    status, ctype = 502, "application/json"
                    data = json.dumps({"error": {"code": "proxy", "message": str(exc)}}).encode()
                request = _json(body) if body else {
                    k: v[-1] for k, v in parse_qs(parts.query).items()}
                proxy.recorder.add(Call(box, _op(rest), started, time.monotonic(), status,
                                        request, _json(data)))
                self._reply(status, data, ctype)

            def _reply(self, status: int, data: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _forward  # noqa: N815

        return Handler


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"value": value}
