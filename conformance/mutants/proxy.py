"""The mutant proxy: an HTTP server that forwards every request to the implementation under
test and lets one :class:`~conformance.mutants.base.Mutant` break one clause on the way.

Signed URLs in JSON replies are rewritten to the proxy's own origin so that the data plane
(GET/HEAD/PUT with ``Range``) passes through it too. Bodies are buffered whole (checkpoint
files in the suite are a few MB at most), which keeps the mutant interface a plain function
of one request and one reply.
"""

from __future__ import annotations

import http.client
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from conformance.mutants.base import Mutant, Request, Response

__all__ = ["HttpUpstream", "MutantProxy", "rewrite_urls"]

#: Headers that belong to one hop and are never forwarded as they are.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def rewrite_urls(value: Any, old: str, new: str) -> Any:
    """Every string in a JSON value that starts with origin ``old``, moved to ``new``."""
    if isinstance(value, str):
        return new + value[len(old):] if value.startswith(old) else value
    if isinstance(value, list):
        return [rewrite_urls(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: rewrite_urls(v, old, new) for k, v in value.items()}
    return value


class HttpUpstream:
    """The implementation behind the proxy, reached with one fresh connection per request
    (a failed keep-alive connection can then never turn into a replayed POST)."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream must be an http(s) URL, got {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.timeout = timeout
        self.public_origin = self.origin  # set by the proxy once it knows its own port

    def _connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def send(self, request: Request) -> Response:
        target = request.path + (("?" + urlencode(request.query)) if request.query else "")
        headers = {k: v for k, v in request.headers if k.lower() not in HOP_BY_HOP}
        headers["Host"] = urlsplit(self.origin).netloc
        if request.body or request.method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(request.body))
        conn = self._connection()
        try:
            conn.request(request.method, target, body=request.body or None, headers=headers)
            reply = conn.getresponse()
            body = reply.read()
            pairs = tuple(reply.getheaders())
        finally:
            conn.close()
        kept = tuple((k, v) for k, v in pairs if k.lower() not in HOP_BY_HOP)
        if request.method == "HEAD":
            # A HEAD reply has no body but keeps the length it would have had.
            kept += tuple((k, v) for k, v in pairs if k.lower() == "content-length")
        response = Response(reply.status, kept, body)
        return self._rewrite(response)

    def _rewrite(self, response: Response) -> Response:
        if self.public_origin == self.origin or not response.body:
            return response
        if "json" not in (response.header("Content-Type") or ""):
            return response
        data = response.json()
        if data is None:
            return response
        moved = rewrite_urls(data, self.origin, self.public_origin)
        return response if moved == data else response.with_json(moved)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: MutantProxy

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path,
            query=tuple(parse_qsl(parts.query, keep_blank_values=True)),
            headers=tuple(self.headers.items()),
            body=self._body(),
        )
        try:
            response = self.server.mutant.handle(request, self.server.upstream)
        except Exception as exc:  # noqa: BLE001 - one broken request must not stop the proxy
            traceback.print_exc(file=sys.stderr)
            response = Response.error(502, "proxy_error", f"mutant proxy: {exc}")
        self._reply(response)

    def _reply(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if self.command == "HEAD":
            length = response.header("Content-Length")
            self.send_header("Content-Length", length if length is not None else "0")
        else:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD" and response.body:
            self.wfile.write(response.body)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = _serve


class MutantProxy(ThreadingHTTPServer):
    """One proxy: a listening socket, an upstream and the active mutant instance."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, upstream: HttpUpstream, mutant: Mutant, port: int = 0, verbose: bool = False
    ) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.upstream = upstream
        self.mutant = mutant
        self.verbose = verbose
        upstream.public_origin = self.url

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (for the runner and tests); stop with :meth:`stop`."""
        thread = threading.Thread(target=self.serve_forever, daemon=True, name="mutant-proxy")
        thread.start()
        return thread

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

