"""Mutants of READ-4 that sign nothing, or sign but end URLs before the time they claim.

``read-urls-unsigned-blob`` is the target of issue 19's wrong PASS: every data-plane URL is
``/blob/<base64 of artifact|version|name|...>``, with no signature and no expiry, so anyone
who knows an artifact's name can build the URL of any of its files. The proxy serves such a
URL for files it never handed out by asking the implementation, with a key it saw read, for
a fresh signed URL of that file.
"""

from __future__ import annotations

import base64
import time
from dataclasses import replace
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.legal_base import walk
from conformance.mutants.m_read import Watching, api_call, obj, resend

BLOB = "/blob/"


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None


@mutant
class UnsignedBlobUrls(Watching):
    """Every GET URL is ``/blob/<base64 of artifact|version|name>`` (a PUT URL adds the
    upload): no signature, no expiry; a GET of any such URL is served, whoever built it.
    A blob read from two places serves through the URL of the last read (its metering)."""

    name = "read-urls-unsigned-blob"
    clause = "READ-4.d"
    summary = "URLs are /blob/<base64 of artifact|version|name>: unsigned, never expire"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.path.startswith(BLOB):
            return self._serve(request, upstream)
        resp = self.forward(request, upstream)
        if request.kind != "api" or not resp.ok or resp.json() is None:
            return resp
        sent = obj(request)
        origin = str(getattr(upstream, "public_origin", ""))
        writing = request.endpoint == "versions/write"

        def move(key: str | None, node: Any) -> Any:
            if not isinstance(node, dict) or not isinstance(node.get("files"), list):
                return node
            parts = [sent.get("artifact"), sent.get("version")] if writing \
                else [node.get("artifact"), node.get("version")]
            files = []
            for f in node["files"]:
                if isinstance(f, dict) and isinstance(f.get("url"), str):
                    blob = "|".join(str(x) for x in [*parts, f.get("name")]
                                    + ([node.get("upload")] if writing else []))
                    with self.lock:
                        self.state.setdefault("blobs", {})[blob] = {
                            "url": f["url"], "auth": request.header("Authorization")}
                        self.state["reader"] = request.header("Authorization")
                    f = {**f, "url": f"{origin}{BLOB}{_b64(blob)}"}
                files.append(f)
            return {**node, "files": files}

        return resp.with_json(walk(resp.json(), move))

    def _serve(self, request: Request, upstream: Upstream) -> Response:
        blob = _unb64(request.path[len(BLOB):])
        parts = blob.split("|") if blob else []
        with self.lock:
            held = self.state.get("blobs", {}).get(blob)
            reader = self.state.get("reader")
        if held is not None:
            got = upstream.send(resend(request, held["url"]))
            if got.status != 403 or len(parts) != 3:
                return got
        if len(parts) != 3 or request.method not in ("GET", "HEAD"):
            return Response.error(403, "forbidden", "no such blob")
        artifact, version, name = parts
        like = Request("GET", "/", headers=(("Authorization", (held or {}).get("auth")
                                             or reader or ""),))
        fresh = api_call(upstream, like, "GET", "versions/read", {
            "artifact": artifact, "version": version, "urls": "1"})
        for f in obj(fresh).get("files") or [] if fresh.ok else []:
            if isinstance(f, dict) and f.get("name") == name and f.get("url"):
                return upstream.send(resend(request, f["url"]))
        return Response.error(403, "forbidden", "no such blob")


class EndsEarly(Watching):
    """A URL of ``method`` stops working ``cut(lifetime)`` seconds after it was handed out,
    although the reply claims the implementation's expiry (or a later one)."""

    method = "GET"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "api":
            resp = self.forward(request, upstream)
            if resp.ok and request.endpoint in ("versions/read", "artifacts/open",
                                                "versions/write"):
                with self.lock:
                    for url in _urls(resp.json()):
                        self.state.setdefault("issued", {}).setdefault(url, time.time())
                return self.claim(resp)
            return resp
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == self.method and info["expires"]:
            with self.lock:
                issued = self.state.get("issued", {}).get(info["url"])
            if issued and time.time() > issued + self.cut(info["expires"] - issued):
                return Response.error(403, "forbidden", "signed URL has expired")
        return self.forward(request, upstream)

    def cut(self, lifetime: float) -> float:
        return lifetime

    def claim(self, resp: Response) -> Response:
        return resp


def _urls(body: Any) -> list[str]:
    found: list[str] = []

    def pick(key: str | None, node: Any) -> Any:
        if key == "url" and isinstance(node, str):
            found.append(node)
        return node

    walk(body, pick)
    return found


@mutant
class UrlsEndHalfwayThroughTheirLife(EndsEarly):
    """GET URLs stop working halfway between their issue and their ``urls_expire_at``."""

    name = "read-urls-end-halfway-before-claimed-expiry"
    clause = "READ-4.e"
    summary = "a GET URL is refused (403) once half of its claimed lifetime has passed"

    def cut(self, lifetime: float) -> float:
        return lifetime / 2


@mutant
class UrlsClaimAnHourMore(EndsEarly):
    """Replies claim ``urls_expire_at`` an hour later than the URLs really expire."""

    name = "read-urls-claim-an-hour-past-real-expiry"
    clause = "READ-4.e"
    summary = "urls_expire_at claims one hour more than the URLs really live"

    def claim(self, resp: Response) -> Response:
        from datetime import UTC, datetime

        def later(key: str | None, node: Any) -> Any:
            if isinstance(node, dict) and isinstance(node.get("urls_expire_at"), str):
                try:
                    t = datetime.fromisoformat(node["urls_expire_at"].replace("Z", "+00:00"))
                except ValueError:
                    return node
                stamp = datetime.fromtimestamp(t.timestamp() + 3600, UTC)
                return {**node, "urls_expire_at": stamp.isoformat().replace("+00:00", "Z")}
            return node

        return resp.with_json(walk(resp.json(), later))


@mutant
class PutUrlsEndHalfway(EndsEarly):
    """PUT URLs stop working halfway between the write and its ``expires_at``."""

    name = "read-put-urls-end-halfway-before-expires-at"
    clause = "READ-4.e"
    summary = "a PUT URL is refused (403) once half of its claimed lifetime has passed"
    method = "PUT"

    def cut(self, lifetime: float) -> float:
        return lifetime / 2


@mutant
class ExpiredPutAccepted(Watching):
    """A PUT to an expired URL answers 200 (and stores nothing), as if it had arrived."""

    name = "read-expired-put-url-answers-200"
    clause = "READ-4.c"
    summary = "a PUT to a URL past its expires_at answers 200 instead of 403"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        if resp.status == 403 and info and info["method"] == "PUT" and info["expires"] \
                and info["expires"] < time.time():
            return Response(200, (("Content-Type", "application/json"),), b"{}")
        return resp


@mutant
class TrailingSlashServed(Watching):
    """A known GET URL with a slash appended to its path (or a doubled slash in it) is
    served as the URL itself."""

    name = "read-url-with-a-slash-added-served"
    clause = "READ-4.d"
    summary = "a signed URL with '/' appended to its path, or a '//' in it, is still served"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and self.info(request) is None:
            for path in {request.path.rstrip("/"), request.path.replace("//", "/")}:
                if path != request.path:
                    moved = replace(request, path=path)
                    if self.info(moved) is not None:
                        return self.forward(moved, upstream)
        return self.forward(request, upstream)


@mutant
class ResumeUrlsEndHalfway(EndsEarly):
    """The URLs of an open's ``resume_from`` stop working halfway through their claimed
    life (those of versions/read are right)."""

    name = "open-resume-from-urls-end-halfway-before-claimed-expiry"
    clause = "READ-4.e"
    summary = "resume_from URLs are refused (403) once half of their claimed lifetime passed"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "api" and request.endpoint != "artifacts/open":
            return self.forward(request, upstream)
        return super().handle(request, upstream)

    def cut(self, lifetime: float) -> float:
        return lifetime / 2
