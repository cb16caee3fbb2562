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
    """Every URL is ``/blob/<base64 of artifact|version|name|place-or-upload>``: no signature,
    no expiry; a GET of any such URL is served, whoever built it."""

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
        if request.endpoint == "versions/write":
            tail = lambda f: str(obj(resp).get("upload"))  # noqa: E731
            where = (sent.get("artifact"), sent.get("version"), "PUT")
        else:
            tail = lambda f: request.arg("place") or _open_place(sent)  # noqa: E731
            where = (None, None, "GET")

        def move(key: str | None, node: Any) -> Any:
            if not isinstance(node, dict) or not isinstance(node.get("files"), list):
                return node
            artifact = where[0] or node.get("artifact")
            version = where[1] or node.get("version")
            files = []
            for f in node["files"]:
                if isinstance(f, dict) and isinstance(f.get("url"), str):
                    blob = "|".join(str(x) for x in (artifact, version, f.get("name"), tail(f),
                                                      where[2]))
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
        if len(parts) != 5:
            return Response.error(404, "not_found", "no such blob")
        with self.lock:
            held = self.state.get("blobs", {}).get(blob)
            reader = self.state.get("reader")
        if held is not None:
            got = upstream.send(resend(request, held["url"]))
            if got.status != 403 or parts[4] == "PUT":
                return got
        if parts[4] == "PUT" or request.method not in ("GET", "HEAD"):
            return Response.error(404, "not_found", "no such blob")
        artifact, version, name, place = parts[:4]
        like = Request("GET", "/", headers=(("Authorization", (held or {}).get("auth")
                                             or reader or ""),))
        fresh = api_call(upstream, like, "GET", "versions/read", {
            "artifact": artifact, "version": version, "urls": "1", "place": place or None})
        for f in obj(fresh).get("files") or [] if fresh.ok else []:
            if isinstance(f, dict) and f.get("name") == name and f.get("url"):
                return upstream.send(resend(request, f["url"]))
        return Response.error(404, "not_found", "no such blob")


def _open_place(sent: dict) -> str:
    p = sent.get("place")
    return f"{p.get('cloud')}/{p.get('region')}" if isinstance(p, dict) else ""


class EndsEarly(Watching):
    """A GET URL stops working ``cut(lifetime)`` seconds after it was handed out, although
    the reply claims the implementation's expiry (or a later one)."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "api":
            resp = self.forward(request, upstream)
            if resp.ok and request.endpoint in ("versions/read", "artifacts/open"):
                with self.lock:
                    for url in _urls(resp.json()):
                        self.state.setdefault("issued", {}).setdefault(url, time.time())
                return self.claim(resp)
            return resp
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "GET" and info["expires"]:
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
