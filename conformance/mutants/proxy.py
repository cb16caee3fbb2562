"""The mutant proxy: an HTTP server that forwards every request to the implementation under
test and lets one :class:`~conformance.mutants.base.Mutant` break one clause on the way.

Signed URLs in JSON replies are rewritten to the proxy's own origin so that the data plane
(GET/HEAD/PUT with ``Range``) passes through it too. Bodies are buffered whole (checkpoint
files in the suite are a few MB at most), which keeps the mutant interface a plain function
of one request and one reply.

A request is read with limits, so that no client can hold a proxy thread: a body larger
than ``max_body`` gets 413, a malformed length or chunk size 400, and reading one request
(headers and body) ends by ``request_deadline``: the watchdog of
:mod:`conformance.transport` shuts the connection down then, whatever read is blocked.
Each socket read also times out after ``read_timeout`` (an idle keep-alive connection).
"""

from __future__ import annotations

import http.client
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.transport import watch_for

#: Largest request body the proxy buffers (the suite's files are a few MB).
MAX_BODY = 64 * 1024 * 1024
#: Seconds to read one request, headers and body; and one socket read.
REQUEST_DEADLINE, READ_TIMEOUT = 60.0, 30.0
_MAX_LINE, _MAX_TRAILERS = 1024, 64


class _Refused(Exception):
    """A request the proxy will not read further: answered with ``status`` and closed."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        super().__init__(detail)


class _Dropped(Exception):
    """The client stopped sending, or the request's deadline shut its connection down."""

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
        # The whole exchange by the deadline, as the suite's own requests: an upstream that
        # trickles its reply cannot hold this proxy thread either.
        watch = watch_for(self.timeout)
        try:
            conn.connect()
            watch.attach(conn.sock)
            try:
                conn.request(request.method, target, body=request.body or None,
                             headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                # The upstream answered before it took the whole body (a 413 for a body
                # past its limit) and closed: its answer is still there to read.
                pass
            reply = conn.getresponse()
            body = reply.read()
            pairs = tuple(reply.getheaders())
        finally:
            watch.finish()
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

    def setup(self) -> None:
        self.timeout = self.server.read_timeout  # per socket read, set by StreamRequestHandler
        super().setup()

    def handle_one_request(self) -> None:
        """One request, read by the server's deadline (the watch is disarmed once the body
        is in: forwarding it and answering take the upstream's time, not the client's)."""
        self.watch = watch_for(self.server.request_deadline)
        self.watch.attach(self.connection)
        try:
            super().handle_one_request()
        finally:
            self.watch.finish()

    def _exactly(self, length: int) -> bytes:
        chunks, left = [], length
        while left:
            got = self.rfile.read1(min(left, 65536))
            if not got:
                raise _Dropped(f"the body ended after {length - left} of {length} bytes")
            chunks.append(got)
            left -= len(got)
        return b"".join(chunks)

    def _line(self) -> bytes:
        line = self.rfile.readline(_MAX_LINE + 1)
        if not line:
            raise _Dropped("the chunked body ended before its last chunk")
        if len(line) > _MAX_LINE:
            raise _Refused(400, "a chunk size line is longer than 1024 bytes")
        return line

    def _chunked(self) -> bytes:
        chunks, total = [], 0
        while True:
            text = self._line().split(b";")[0].strip()
            if not text or not all(c in b"0123456789abcdefABCDEF" for c in text):
                raise _Refused(400, f"malformed chunk size {text[:40]!r}")
            size = int(text, 16)
            total += size
            if total > self.server.max_body:
                raise _Refused(413, f"chunked body over {self.server.max_body} bytes")
            if size == 0:
                for _ in range(_MAX_TRAILERS):
                    if self._line() in (b"\r\n", b"\n"):
                        return b"".join(chunks)
                raise _Refused(400, "more than 64 trailer lines")
            chunks.append(self._exactly(size))
            self._line()

    def _body(self) -> bytes:
        """The request body, read with the server's limits; raises _Refused or _Dropped."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._chunked()
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        if not raw.strip().isdigit():
            raise _Refused(400, f"malformed Content-Length {raw[:40]!r}")
        length = int(raw)
        if length > self.server.max_body:
            raise _Refused(413, f"Content-Length {length} over {self.server.max_body} bytes")
        return self._exactly(length)

    def _read_request(self) -> Request | None:
        """The request, or None when it was refused or dropped (the connection closes)."""
        parts = urlsplit(self.path)
        try:
            body = self._body()
        except _Refused as exc:
            self.close_connection = True
            self._reply(Response.error(exc.status, "proxy_refused", f"mutant proxy: {exc}"))
            return None
        except (_Dropped, OSError) as exc:
            self.close_connection = True
            if self.server.verbose:
                self.log_message("dropped %s %s: %s", self.command, self.path, exc)
            return None
        if self.watch.fired:  # the deadline passed just as the body was complete
            self.close_connection = True
            return None
        self.watch.finish()
        return Request(
            method=self.command,
            path=parts.path,
            query=tuple(parse_qsl(parts.query, keep_blank_values=True)),
            headers=tuple(self.headers.items()),
            body=body,
        )

    def _serve(self) -> None:
        request = self._read_request()
        if request is None:
            return
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
        self,
        upstream: HttpUpstream,
        mutant: Mutant,
        port: int = 0,
        verbose: bool = False,
        *,
        max_body: int = MAX_BODY,
        request_deadline: float = REQUEST_DEADLINE,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.upstream = upstream
        self.mutant = mutant
        self.verbose = verbose
        self.max_body = max_body
        self.request_deadline = request_deadline
        self.read_timeout = read_timeout
        upstream.public_origin = self.url

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (for the runner and tests); stop with :meth:`stop`."""
        # A short poll: stop() waits for the loop to notice, 0.5 s by default, twice per mutant.
        thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True,
                                  name="mutant-proxy")
        thread.start()
        return thread

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

