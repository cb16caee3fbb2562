"""Legal variants that keep state: other token, upload and made-up holder formats, another
shape of signed URL, and name conflicts reported at commit instead of at write.

Each keeps a two-way table so that what the client sends back is translated to what the
implementation gave out; anything the table does not know (the suite's made-up or tampered
values) passes through unchanged, so the implementation still refuses it.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import secrets
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.legal_base import legal
from conformance.mutants.legal_base import walk
from conformance.mutants.m_read import resend

ID_KEYS = ("token", "upload")


def _json_body(request: Request) -> dict[str, Any] | None:
    body = request.json()
    return body if isinstance(body, dict) else None


@legal
class OpaqueIds(Mutant):
    """Tokens, upload ids and made-up holder ids in another format (a prefix, a counter and
    random hex, of another length than the implementation's)."""

    name = "opaque-ids"
    clause = "-"
    summary = "tokens, upload ids and made-up holders in another format"

    def _alias(self, kind: str, real: str) -> str:
        with self.lock:
            out = self.state.setdefault("out", {})
            if (kind, real) not in out:
                n = len(out) + 1
                alias = f"{kind[:3]}_{n:04d}{secrets.token_hex(11)}"
                out[(kind, real)] = alias
                self.state.setdefault("back", {})[(kind, alias)] = real
            return out[(kind, real)]

    def _real(self, kind: str, value: Any) -> Any:
        with self.lock:
            return self.state.get("back", {}).get((kind, value), value)

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = _json_body(request) if request.kind == "api" else None
        if body is not None:
            fixed = dict(body)
            for kind in (*ID_KEYS, "holder"):
                if isinstance(fixed.get(kind), str):
                    fixed[kind] = self._real(kind, fixed[kind])
            if fixed != body:
                request = request.with_json(fixed)
        resp = upstream.send(request)
        reply = resp.json() if request.kind == "api" else None
        if reply is None:
            return resp
        if request.endpoint == "artifacts/open" and resp.ok and body is not None \
                and "holder" not in body and isinstance(reply.get("holder"), str):
            self._alias("holder", reply["holder"])  # made up by the implementation
        with self.lock:
            made_up = {real for (k, real) in self.state.get("out", {}) if k == "holder"}

        def swap(key: str | None, node: Any) -> Any:
            if not isinstance(node, dict):
                return node
            node = dict(node)
            for kind in ID_KEYS:
                if isinstance(node.get(kind), str):
                    node[kind] = self._alias(kind, node[kind])
            if node.get("holder") in made_up:
                node["holder"] = self._alias("holder", node["holder"])
            return node

        return resp.with_json(walk(reply, swap))


def _leaf(url: str) -> str:
    """The last part of a URL's path, the name a reshaped URL keeps."""
    return urlsplit(url).path.rsplit("/", 1)[-1] or "f"


@legal
class ReshapedUrls(Mutant):
    """Signed URLs of another shape: ``/blob/<n>/<file>?sig=<hmac>``, checked here and then
    served by the implementation's own URL (which still enforces its expiry)."""

    name = "reshaped-urls"
    clause = "-"
    summary = "signed URLs as /blob/<n>/<file>?sig=<hmac> instead of the implementation's"
    prefix = "/blob/"

    def shape(self, origin: str, n: int, real: str) -> str:
        return f"{origin}{self.prefix}{n}/{_leaf(real)}?sig={self.signature(n)}"

    def signature(self, n: int) -> str:
        return self._sign(n)

    def check(self, request: Request) -> int | None:
        """The URL's number when its signature matches, else None."""
        parts = request.path.split("/")
        n = int(parts[2]) if len(parts) == 4 and parts[2].isdigit() else 0
        with self.lock:
            real = self.state.get(n)
        if real is None or parts[3] != _leaf(real):
            return None
        return n if hmac.compare_digest(request.arg("sig") or "", self._sign(n)) else None

    def _sign(self, n: int) -> str:
        with self.lock:
            secret = self.state.setdefault("secret", secrets.token_bytes(16))
        return hmac.new(secret, str(n).encode(), hashlib.sha256).hexdigest()[:40]

    def _next(self) -> int:
        with self.lock:
            return next(self.state.setdefault("count", itertools.count(1)))

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.path.startswith(self.prefix):
            return self._serve(request, upstream)
        resp = upstream.send(request)
        reply = resp.json() if request.kind == "api" else None
        if reply is None:
            return resp
        origin = str(getattr(upstream, "public_origin", ""))

        def move(key: str | None, node: Any) -> Any:
            if key == "url" and isinstance(node, str) and node.startswith(origin):
                n = self._next()
                with self.lock:
                    self.state[n] = node
                return self.shape(origin, n, node)
            return node

        return resp.with_json(walk(reply, move))

    def _serve(self, request: Request, upstream: Upstream) -> Response:
        n = self.check(request)
        with self.lock:
            real = self.state.get(n) if n is not None else None
        if real is None:
            return Response.error(403, "forbidden", "the URL's signature does not match")
        return upstream.send(resend(request, real))


@legal
class HexSignaturesAnyCase(ReshapedUrls):
    """Reshaped URLs whose signature is upper-case hex, read in any case (as
    ``bytes.fromhex`` reads hex): a signature with its case swapped is the same signature,
    and serves the file, while a changed digit still gets 403."""

    name = "hex-signatures-any-case"
    summary = "signed URLs with an upper-case hex signature that is read in any case"
    prefix = "/hexblob/"

    def signature(self, n: int) -> str:
        return self._sign(n).upper()

    def check(self, request: Request) -> int | None:
        sig = request.arg("sig") or ""
        return super().check(request.with_query(sig=sig.lower()))


@legal
class ConflictsAtCommit(Mutant):
    """``version_exists`` and ``not_after_latest`` reported at commit: the write is accepted
    with URLs this proxy serves, and the commit answers the conflict the write met."""

    name = "conflicts-at-commit"
    clause = "-"
    summary = "version_exists / not_after_latest reported at commit instead of at write"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind == "data" and request.path.startswith("/deferred/"):
            return self._put(request)
        body = _json_body(request) or {}
        if request.endpoint == "versions/commit":
            with self.lock:
                held = self.state.get("uploads", {}).get(body.get("upload"))
            if held is not None and held["artifact"] == body.get("artifact"):
                return held["error"]
        resp = upstream.send(request)
        reply = resp.json()
        if request.endpoint == "artifacts/open" and resp.ok and isinstance(reply, dict):
            with self.lock:
                self.state.setdefault("where", {})[reply.get("token")] = \
                    reply.get("write_location")
        code = ((reply or {}).get("error") or {}).get("code") if isinstance(reply, dict) \
            else None
        if request.endpoint == "versions/write" and code in ("version_exists",
                                                              "not_after_latest"):
            return self._defer(body, resp, str(getattr(upstream, "public_origin", "")))
        return resp

    def _defer(self, body: dict[str, Any], error: Response, origin: str) -> Response:
        with self.lock:
            where = self.state.get("where", {}).get(body.get("token"))
        files = body.get("files")
        if not isinstance(where, dict) or not isinstance(files, list) \
                or not all(isinstance(f, dict) for f in files):
            return error
        upload = f"deferred-{secrets.token_hex(8)}"
        urls = [{"name": f.get("name"), "url": f"{origin}/deferred/{upload}/{i}"}
                for i, f in enumerate(files)]
        with self.lock:
            self.state.setdefault("uploads", {})[upload] = {
                "artifact": body.get("artifact"), "error": error,
                "sizes": [f.get("size") for f in files],
                "names": [f.get("name") for f in files]}
        expires = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        reply = {"upload": upload,
                 "location": {"cloud": where.get("cloud"), "region": where.get("region")},
                 "route": where.get("route"), "files": urls, "expires_at": expires}
        return Response(200, (("Content-Type", "application/json"),)).with_json(reply)

    def _put(self, request: Request) -> Response:
        parts = request.path.split("/")
        with self.lock:
            held = self.state.get("uploads", {}).get(parts[2] if len(parts) == 4 else "")
        if held is None or not parts[3].isdigit() or int(parts[3]) >= len(held["sizes"]) \
                or request.method != "PUT":
            return Response.error(403, "forbidden", "no such signed URL")
        size = held["sizes"][int(parts[3])]
        if isinstance(size, int) and len(request.body) > size:
            return Response.error(413, "payload_too_large", "the body is longer than declared")
        # What a streamed file's PUT answers (VER-6.a); a declared file's PUT may say the same.
        got = {"name": held["names"][int(parts[3])], "size": len(request.body),
               "sha256": hashlib.sha256(request.body).hexdigest()}
        return Response(200, (("Content-Type", "application/json"),)).with_json(got)


@legal
class OpaquePathUrls(ReshapedUrls):
    """Signed URLs that are one opaque path, ``/o/<n>-<hmac>``: no query, no file name."""

    name = "opaque-path-urls"
    clause = "-"
    summary = "signed URLs as /o/<n>-<hmac>: no query string and no file name in them"
    prefix = "/o/"

    def shape(self, origin: str, n: int, real: str) -> str:
        return f"{origin}/o/{n}-{self._sign(n)}"

    def check(self, request: Request) -> int | None:
        n, _, sig = request.path[len(self.prefix):].partition("-")
        if not n.isdigit() or request.query or not hmac.compare_digest(sig, self._sign(int(n))):
            return None
        return int(n)
