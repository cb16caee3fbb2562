"""Mutants of READ-1..4: which version a read names, signed URLs, ranges, signatures, expiry.

Also the small helpers the other ``m_*`` modules share: calling the upstream API with the
client's own key, and :class:`Watching`, a mutant base that remembers every signed URL it
passed on (what it points at), so a data-plane request can be tied to its artifact, version
and file without knowing anything about how the implementation builds its URLs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from conformance.mutants.base import (  # noqa: F401  (error_code: importable from here too)
    API_PREFIX,
    Mutant,
    Request,
    Response,
    Upstream,
    api_request,
    emptied,
    error_code,
    mutant,
)

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


# --- READ-1 ------------------------------------------------------------------------------


def _latest_read(request: Request) -> bool:
    return request.endpoint == "versions/read" and request.arg("version", "latest") == "latest"


@mutant
class StaleLatestForUrlReads(Mutant):
    """A read of latest with ``urls=1`` is cached per artifact and place on first use, so
    after a newer commit it still names the old version; ``urls=0`` reads are right."""

    name = "read-latest-stale-for-url-reads"
    clause = "READ-1.a"
    summary = "latest read with urls=1 keeps answering the version it first answered"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if not (_latest_read(request) and request.arg("urls") == "1" and resp.ok):
            return resp
        key = (request.arg("artifact"), request.arg("place"))
        with self.lock:
            return self.state.setdefault(key, resp)


@mutant
class OmittedVersionIsSecondHighest(Mutant):
    """A read without a ``version`` parameter, on an artifact with 3 or more versions,
    answers the second-highest step (explicit ``version=latest`` is right)."""

    name = "read-omitted-version-second-highest-when-3-versions"
    clause = "READ-1.a"
    summary = "read with no version parameter gives the second-highest step once 3 exist"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint != "versions/read" or request.arg("version") is not None:
            return resp
        versions = committed(upstream, request, request.arg("artifact") or "")
        if not resp.ok or len(versions) < 3:
            return resp
        return upstream.send(request.with_query(version=versions[-2]["version"]))


@mutant
class UnknownGapStepGivesFloor(Mutant):
    """A read of an unknown step that lies between two committed steps answers the highest
    committed step below it (a ``step <= ?`` lookup)."""

    name = "read-unknown-gap-step-gives-floor-version"
    clause = "READ-1.b"
    summary = "unknown step between committed ones reads the committed step below it"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        wanted = request.arg("version") or ""
        if request.endpoint != "versions/read" or resp.status != 404 or not wanted[5:].isdigit():
            return resp
        steps = [v["version"] for v in committed(upstream, request, request.arg("artifact") or "")]
        below = [s for s in steps if s < wanted]
        if below and steps[-1] > wanted:
            return upstream.send(request.with_query(version=below[-1]))
        return resp


@mutant
class UnknownVersionWithUrlsForbidden(Mutant):
    """A read of an unknown version with ``urls=1`` gets 403 (signing fails first)."""

    name = "read-unknown-version-with-urls-gives-403"
    clause = "READ-1.b"
    summary = "unknown version read with urls=1 answers 403 forbidden instead of 404"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint == "versions/read" and request.arg("urls") == "1" \
                and resp.status == 404 and request.arg("version", "latest") != "latest":
            return Response.error(403, "forbidden", "no URL can be signed for this version")
        return resp


@mutant
class UsageOfUnknownArtifactZeros(Mutant):
    """``usage/read`` of an artifact nobody made answers a report of zeros (the same
    request without ``artifact``, emptied) instead of 404."""

    name = "read-usage-of-unknown-artifact-gives-zeros"
    clause = "READ-1.b"
    summary = "usage/read of a missing artifact answers 200 with zero bytes instead of 404"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint != "usage/read" or resp.status != 404 \
                or request.arg("artifact") is None:
            return resp
        return emptied(upstream.send(request.with_query(artifact=None))) or resp


@mutant
class ForkFallsBackToSource(Mutant):
    """A read of a version a fork does not have answers the fork source's version of that
    name (the fork shares the source's version table)."""

    name = "read-unknown-version-of-fork-read-from-source"
    clause = "READ-1.b"
    summary = "unknown version of a forked artifact is read from its fork source"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(request)
        resume = body.get("resume") if isinstance(body, dict) else None
        if request.endpoint == "artifacts/open" and resp.ok and isinstance(resume, str) \
                and resume.startswith("o41://"):
            with self.lock:
                self.state[body.get("artifact")] = resume[6:].rsplit("/", 1)[0]
        if request.endpoint == "versions/read" and resp.status == 404:
            with self.lock:
                source = self.state.get(request.arg("artifact"))
            if source and request.arg("version", "latest") != "latest":
                moved = upstream.send(request.with_query(artifact=source))
                return moved if moved.ok else resp
        return resp


# --- READ-2 ------------------------------------------------------------------------------


@mutant
class SecondFileNeedsKey(Watching):
    """A plain GET of any file but the first of a version needs the API key (401)."""

    name = "read-url-second-file-needs-api-key"
    clause = "READ-2.a"
    summary = "signed URL of a version's second file is refused without Authorization"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "GET" and info["index"] >= 1 \
                and not request.header("Authorization"):
            return Response.error(401, "unauthenticated", "an API key is required")
        return self.forward(request, upstream)


@mutant
class BigFileLosesLastByte(Mutant):
    """A plain (unranged) GET of a file over 1 MiB sends one byte fewer (ranged GETs and
    smaller files are right)."""

    name = "read-url-plain-get-of-big-file-drops-last-byte"
    clause = "READ-2.a"
    summary = "an unranged GET of a file over 1 MiB is one byte short"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.kind == "data" and request.method == "GET" and resp.status == 200 \
                and not request.header("Range") and len(resp.body) > MIB:
            return with_headers(resp.with_body(resp.body[:-1]), Content_Length=None)
        return resp


@mutant
class NestedFilesWithoutUrl(Mutant):
    """With ``urls=1``, files whose name has a folder get no URL."""

    name = "read-urls-missing-for-nested-file-names"
    clause = "READ-2.a"
    summary = "urls=1 leaves out the URL of files whose name contains a slash"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = resp.json()
        if request.endpoint != "versions/read" or not resp.ok or not isinstance(body, dict):
            return resp
        for f in body.get("files") or []:
            if "/" in str(f.get("name")):
                f.pop("url", None)
        return resp.with_json(body)
