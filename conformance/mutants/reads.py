"""What the data-plane mutants share: the signed URLs seen, ranges, byte replies, and
extra API calls with the client's own key.

:class:`Watching` is a mutant base that remembers every signed URL it passed on (what it
points at), so a data-plane request can be tied to its artifact, version and file without
knowing anything about how the implementation builds its URLs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.base import api_request

__all__ = ["MIB", "Watching", "api_call", "bytes_reply", "committed", "obj", "parse_range",
           "request_key", "resend", "served_range", "target_artifact", "unsatisfiable",
           "url_key", "with_headers"]

MIB = 1 << 20
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def api_call(
    upstream: Upstream, like: Request, method: str, endpoint: str,
    query: dict[str, str] | None = None, body: Any = None,
) -> Response:
    """One extra API call to the upstream, with the key of the request ``like``."""
    q = tuple((k, v) for k, v in (query or {}).items() if v is not None)
    auth = like.header("Authorization")
    return upstream.send(api_request(method, endpoint, auth, q, body))


def committed(upstream: Upstream, like: Request, artifact: str) -> list[dict[str, Any]]:
    """The committed versions of ``artifact`` in step order ([] when it cannot be listed)."""
    reply = api_call(upstream, like, "GET", "versions/list", {"artifact": artifact})
    body = reply.json() if reply.ok else None
    return list(body.get("versions") or []) if isinstance(body, dict) else []


def target_artifact(request: Request) -> str | None:
    """The artifact an API request is about (query or JSON body)."""
    body = request.json()
    if isinstance(body, dict) and isinstance(body.get("artifact"), str):
        return body["artifact"]
    return request.arg("artifact")


def obj(message: Request | Response) -> dict[str, Any]:
    """A JSON body that is an object, else {} (the suite sends other JSON on purpose)."""
    body = message.json()
    return body if isinstance(body, dict) else {}


def with_headers(resp: Response, **changes: str | None) -> Response:
    """The reply with headers set (``Content_Range`` -> ``Content-Range``) or removed."""
    names = {k.replace("_", "-").lower(): (k.replace("_", "-"), v) for k, v in changes.items()}
    kept = [(k, v) for k, v in resp.headers if k.lower() not in names]
    kept += [(k, v) for k, v in names.values() if v is not None]
    return replace(resp, headers=tuple(kept))


def parse_range(header: str | None, size: int) -> tuple[int, int] | None | str:
    """``(a, b)`` for a satisfiable ``bytes=`` range, None if it cannot be satisfied, and
    ``"none"`` when there is no (single, parseable) range at all."""
    m = _RANGE.fullmatch((header or "").strip())
    if not m or (not m[1] and not m[2]):
        return "none"
    if not m[1]:
        n = int(m[2])
        return (max(0, size - n), size - 1) if n and size else None
    a, b = int(m[1]), int(m[2]) if m[2] else size - 1
    if a >= size or b < a:
        return None
    return a, min(b, size - 1)


def bytes_reply(body: bytes, size: int, span: tuple[int, int] | None, head: bool) -> Response:
    """A data-plane reply of ``body`` (the whole file, or the range ``span`` of it)."""
    headers = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
    status = 200
    if span is not None:
        status = 206
        headers.append(("Content-Range", f"bytes {span[0]}-{span[1]}/{size}"))
    headers.append(("Content-Length", str(len(body))))
    return Response(status, tuple(headers), b"" if head else body)


def unsatisfiable(size: int) -> Response:
    err = Response.error(416, "range_not_satisfiable", f"the file has {size} bytes")
    return with_headers(err, Content_Range=f"bytes */{size}")


def url_key(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.path, urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))


def request_key(request: Request) -> tuple[str, str]:
    return request.path, urlencode(sorted(request.query))


def _stamp(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Watching(Mutant):
    """Passes everything through and remembers each signed URL seen in a reply: its file,
    version, artifact, position, reader place, method and expiry (``self.urls``)."""

    @property
    def urls(self) -> dict[tuple[str, str], dict[str, Any]]:
        return self.state.setdefault("urls", {})

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.kind == "api" and resp.ok:
            self.remember(request, resp)
        return resp

    def handle(self, request: Request, upstream: Upstream) -> Response:
        return self.forward(request, upstream)

    def remember(self, request: Request, resp: Response) -> None:
        body, sent = resp.json(), obj(request)
        if not isinstance(body, dict):
            return
        auth = request.header("Authorization")
        if request.endpoint == "versions/write":
            self._files(body, "PUT", sent.get("artifact"), sent.get("version"), None, auth,
                        body.get("expires_at"), sent.get("files") or [])
            return
        place = request.arg("place")
        if request.endpoint == "artifacts/open":
            body, p = body.get("resume_from") or {}, sent.get("place")
            place = f"{p.get('cloud')}/{p.get('region')}" if isinstance(p, dict) else None
        if isinstance(body, dict) and body.get("files"):
            self._files(body, "GET", body.get("artifact"), body.get("version"), place, auth,
                        body.get("urls_expire_at"), body["files"])

    def _files(self, body: dict, method: str, artifact: Any, version: Any, place: str | None,
               auth: str | None, expires: Any, declared: list) -> None:
        files = body.get("files") or []
        sizes = {f.get("name"): f for f in declared if isinstance(f, dict)}
        with self.lock:
            for i, f in enumerate(files):
                if not isinstance(f, dict) or not f.get("url"):
                    continue
                spec = sizes.get(f.get("name")) or f
                self.urls[url_key(f["url"])] = {
                    "artifact": artifact, "version": version, "name": f.get("name"),
                    "size": spec.get("size"), "sha256": spec.get("sha256"), "index": i,
                    "count": len(files), "method": method, "place": place, "auth": auth,
                    "upload": body.get("upload"), "expires": _stamp(expires), "url": f["url"],
                    "route": body.get("route"),
                }

    def info(self, request: Request) -> dict[str, Any] | None:
        with self.lock:
            return self.urls.get(request_key(request))

    def known(self, **match: Any) -> list[dict[str, Any]]:
        with self.lock:
            return [i for i in self.urls.values() if all(i.get(k) == v for k, v in match.items())]


def resend(request: Request, url: str) -> Request:
    """The data-plane request sent to another known URL instead."""
    parts = urlsplit(url)
    return replace(request, path=parts.path,
                   query=tuple(parse_qsl(parts.query, keep_blank_values=True)))


def served_range(request: Request, data: bytes) -> Response:
    """``data`` served as a file to a GET or HEAD, honouring its ``Range`` header."""
    span = parse_range(request.header("Range"), len(data))
    if span is None:
        return unsatisfiable(len(data))
    head = request.method == "HEAD"
    if span == "none":
        return bytes_reply(data, len(data), None, head)
    a, b = span  # type: ignore[misc]
    return bytes_reply(data[a:b + 1], len(data), (a, b), head)
