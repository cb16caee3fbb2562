"""Mutants of VER-1..3: version and file names, immutability, step order.

Mutants that accept a name the contract refuses hand the upstream a safe spelling of it and
translate replies back, so the client sees its own name accepted and everything else intact.
"""

from __future__ import annotations

import re
from typing import Any

from conformance.mutants.base import Mutant, Request, Response, Upstream, mutant
from conformance.mutants.m_read import (
    Watching,
    api_call,
    bytes_reply,
    committed,
    error_code,
    obj,
    parse_range,
    resend,
    target_artifact,
)

_NAME = re.compile(r"step-[0-9]{8}")
_CODED = "mx-"


def _safe_segments(name: str) -> bool:
    return bool(name) and all(s not in ("", ".", "..") for s in name.split("/"))


def encode_name(name: str) -> str:
    """A safe stand-in for a file name the upstream would refuse (decoded in replies)."""
    return _CODED + name.encode().hex()


def decode_names(value: Any) -> Any:
    """Every file ``name`` encoded by :func:`encode_name`, back to what the client sent."""
    if isinstance(value, list):
        return [decode_names(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: decode_names(v) for k, v in value.items()}
    name = out.get("name")
    if isinstance(name, str) and name.startswith(_CODED):
        try:
            out["name"] = bytes.fromhex(name[len(_CODED):]).decode()
        except ValueError:
            pass
    return out


def decoded(resp: Response) -> Response:
    body = resp.json()
    return resp.with_json(decode_names(body)) if isinstance(body, (dict, list)) else resp


# --- VER-1.a -----------------------------------------------------------------------------


class LenientVersionName(Mutant):
    """A write whose version name ``fix`` can turn into a valid one is written under it."""

    def fix(self, version: str) -> str | None:
        return None

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = request.json()
        if request.endpoint == "versions/write" and isinstance(body, dict) \
                and isinstance(body.get("version"), str) and not _NAME.fullmatch(body["version"]):
            fixed = self.fix(body["version"])
            if fixed and _NAME.fullmatch(fixed):
                return upstream.send(request.with_json({**body, "version": fixed}))
        return upstream.send(request)


@mutant
class TrailingNewlineName(LenientVersionName):
    """``step-00000001\\n`` is accepted (a ``re.match`` with ``$`` instead of fullmatch)."""

    name = "ver-name-trailing-newline-accepted"
    clause = "VER-1.a"
    summary = "a version name with a trailing newline is written as the name without it"

    def fix(self, version: str) -> str | None:
        return version[:-1] if version.endswith("\n") else None


@mutant
class NineDigitsLeadingZero(LenientVersionName):
    """``step-0`` and 8 more digits is read as a number and accepted."""

    name = "ver-name-nine-digits-with-leading-zero-accepted"
    clause = "VER-1.a"
    summary = "step- with 9 digits starting with 0 is accepted as the 8-digit name"

    def fix(self, version: str) -> str | None:
        return "step-" + version[6:] if re.fullmatch(r"step-0[0-9]{8}", version) else None


@mutant
class UnicodeDigits(LenientVersionName):
    """Digits of any script count (``str.isdecimal`` instead of ASCII 0-9)."""

    name = "ver-name-non-ascii-digits-accepted"
    clause = "VER-1.a"
    summary = "step- and 8 non-ASCII decimal digits is accepted"

    def fix(self, version: str) -> str | None:
        digits = version[5:]
        if version.startswith("step-") and len(digits) == 8 and digits.isdecimal():
            return f"step-{int(digits):08d}"
        return None


@mutant
class MalformedReadNotFound(Mutant):
    """A read of a malformed version name gets 404 instead of 400 (writes are right)."""

    name = "ver-name-malformed-read-gives-404"
    clause = "VER-1.a"
    summary = "versions/read with a malformed version name answers 404 not_found"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.endpoint == "versions/read" and resp.status == 400 \
                and request.arg("version") not in (None, "latest") \
                and not _NAME.fullmatch(request.arg("version") or ""):
            return Response.error(404, "not_found", f"no version {request.arg('version')}")
        return resp


# --- VER-1.b -----------------------------------------------------------------------------


class LenientFileName(Mutant):
    """A write whose file names ``allows`` refuses none of them, hiding the unsafe ones
    from the upstream behind a safe spelling."""

    def allows(self, index: int, name: str) -> bool:
        return False

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = request.json()
        if request.endpoint == "versions/write" and isinstance(body, dict) \
                and isinstance(body.get("files"), list):
            files = [dict(f) if isinstance(f, dict) else f for f in body["files"]]
            changed = False
            for i, f in enumerate(files):
                name = f.get("name") if isinstance(f, dict) else None
                if isinstance(name, str) and not _safe_segments(name) and self.allows(i, name):
                    f["name"], changed = encode_name(name), True
            if changed:
                return decoded(upstream.send(request.with_json({**body, "files": files})))
        return decoded(upstream.send(request))


@mutant
class LeadingDotSegment(LenientFileName):
    """``./model.pt`` is accepted (only a leading ``./`` slips through)."""

    name = "ver-file-name-leading-dot-segment-accepted"
    clause = "VER-1.b"
    summary = "a file name starting with ./ is accepted"

    def allows(self, index: int, name: str) -> bool:
        return name.startswith("./") and _safe_segments(name[2:])


@mutant
class TrailingSlash(LenientFileName):
    """``dir/`` (an empty last segment) is accepted."""

    name = "ver-file-name-trailing-slash-accepted"
    clause = "VER-1.b"
    summary = "a file name ending with / is accepted"

    def allows(self, index: int, name: str) -> bool:
        return name.endswith("/") and _safe_segments(name[:-1])


@mutant
class OnlyFirstFileChecked(LenientFileName):
    """Only the first declared file's name is checked."""

    name = "ver-file-name-checked-on-first-file-only"
    clause = "VER-1.b"
    summary = "an unsafe file name is accepted when it is not the first file of the write"

    def allows(self, index: int, name: str) -> bool:
        return index >= 1


# --- VER-2 -------------------------------------------------------------------------------


@mutant
class ExistsAsNotAfterLatest(Mutant):
    """Rewriting an existing version that is not the latest, once the artifact has 3 or
    more versions, gets ``not_after_latest`` instead of ``version_exists``."""

    name = "ver-exists-reported-as-not-after-latest-when-3-versions"
    clause = "VER-2.a"
    summary = "an existing non-latest name, with 3+ versions, answers not_after_latest"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(request)
        if request.endpoint != "versions/write" or error_code(resp) != "version_exists":
            return resp
        versions = committed(upstream, request, body.get("artifact", ""))
        if len(versions) >= 3 and versions[-1]["version"] != body.get("version"):
            return Response.error(409, "not_after_latest", "the step is not after the latest")
        return resp


class UploadBook(Watching):
    """:class:`Watching`, plus what each upload declared, which of its files were PUT
    (with the bodies) and which uploads were committed."""

    def remember(self, request: Request, resp: Response) -> None:
        super().remember(request, resp)
        sent, body = obj(request), obj(resp)
        with self.lock:
            if request.endpoint == "versions/write" and body.get("upload"):
                self.state.setdefault("uploads", {})[body["upload"]] = {
                    "artifact": sent.get("artifact"), "version": sent.get("version"),
                    "files": sent.get("files") or [], "token": sent.get("token"),
                    "urls": {f.get("name"): f.get("url") for f in body.get("files") or []}}
            if request.endpoint == "versions/commit":
                self.state.setdefault("committed", set()).add(sent.get("upload"))

    def upload(self, upload: Any) -> dict[str, Any] | None:
        with self.lock:
            return self.state.get("uploads", {}).get(upload)

    def put_body(self, url: str | None) -> bytes | None:
        with self.lock:
            return self.state.get("puts", {}).get(url)

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = super().forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "PUT" and request.method == "PUT" and resp.ok:
            with self.lock:
                self.state.setdefault("puts", {})[info["url"]] = request.body
                last = self.state.setdefault("last_put", {})
                last[(info["artifact"], info["version"], info["name"])] = (
                    info["upload"], request.body)
        return resp

    def staged(self, artifact: str) -> list[dict[str, Any]]:
        """Uploads of ``artifact`` not committed, whose every file was PUT."""
        with self.lock:
            done = self.state.get("committed", set())
            ups = [dict(u, upload=k) for k, u in self.state.get("uploads", {}).items()
                   if u["artifact"] == artifact and k not in done]
            puts = self.state.get("puts", {})
        return [u for u in ups if all(url in puts for url in u["urls"].values())]


@mutant
class IdenticalRecommit(UploadBook):
    """A second upload of a committed version with the very same files commits "fine":
    the reply is the committed version, as if the commit were an idempotent retry."""

    name = "ver-exists-identical-second-upload-commits"
    clause = "VER-2.a"
    summary = "committing a second upload of a committed name with identical files gives 200"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        up = self.upload(obj(request).get("upload"))
        if request.endpoint != "versions/commit" or error_code(resp) != "version_exists" \
                or not up:
            return resp
        read = api_call(upstream, request, "GET", "versions/read",
                        {"artifact": up["artifact"], "version": up["version"]})
        have = {(f["name"], f["size"], f["sha256"]) for f in obj(read).get("files", [])}
        want = {(f.get("name"), f.get("size"), f.get("sha256")) for f in up["files"]}
        return read if read.ok and have == want else resp


@mutant
class BytesFollowLastPut(UploadBook):
    """Bytes are stored per artifact, version and file name: a PUT to another upload of a
    version replaces what its committed file serves, when the size is the same."""

    name = "ver-immutable-bytes-follow-last-put-of-same-name"
    clause = "VER-2.b"
    summary = "a committed file serves the bytes last PUT for its name by another upload"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if not info or info["method"] != "GET" or request.method not in ("GET", "HEAD"):
            return self.forward(request, upstream)
        with self.lock:
            upload, data = self.state.get("last_put", {}).get(
                (info["artifact"], info["version"], info["name"]), (None, None))
            done = self.state.get("committed", set())
        if data is None or upload in done or len(data) != info["size"]:
            return self.forward(request, upstream)
        span = parse_range(request.header("Range"), len(data))
        if span is None:
            return self.forward(request, upstream)
        head = request.method == "HEAD"
        if span == "none":
            return bytes_reply(data, len(data), None, head)
        return bytes_reply(data[span[0]:span[1] + 1], len(data), span, head)


@mutant
class OldBytesFromNewest(Watching):
    """Once an artifact has 3 or more versions, a file of an older version is served from
    the newest version's file of the same name and size (a cache keyed by file name)."""

    name = "ver-immutable-old-file-served-from-newest-same-name"
    clause = "VER-2.b"
    summary = "with 3+ versions, an old file serves the newest same-named same-size file"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if not info or info["method"] != "GET":
            return self.forward(request, upstream)
        same = self.known(method="GET", artifact=info["artifact"])
        versions = sorted({i["version"] for i in same if isinstance(i["version"], str)})
        newer = [i for i in same if i["name"] == info["name"] and i["size"] == info["size"]
                 and isinstance(i["version"], str) and i["version"] > info["version"]]
        if len(versions) < 3 or not newer:
            return self.forward(request, upstream)
        best = max(newer, key=lambda i: i["version"])
        return self.forward(resend(request, best["url"]), upstream)


# --- VER-3.a -----------------------------------------------------------------------------


@mutant
class OlderAsExists(Mutant):
    """With 3 or more versions, an older step gets ``version_exists``."""

    name = "ver-step-older-reported-as-version-exists-when-3-versions"
    clause = "VER-3.a"
    summary = "a step below the latest, with 3+ versions, answers version_exists"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if error_code(resp) != "not_after_latest":
            return resp
        if len(committed(upstream, request, target_artifact(request) or "")) >= 3:
            return Response.error(409, "version_exists", "that version is already committed")
        return resp


SHADOW = "step-99999999"


@mutant
class OneBelowLatestDropped(UploadBook):
    """A write one step below the latest is accepted: the upload is real (staged under
    another name) and its commit answers a Version, but nothing is ever committed."""

    name = "ver-step-one-below-latest-accepted-then-lost"
    clause = "VER-3.a"
    summary = "a step exactly one below the latest is accepted, and silently never committed"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = obj(request)
        if request.endpoint == "versions/commit":
            with self.lock:
                fake = self.state.get("shadows", {}).get(body.get("upload"))
            if fake is not None:
                return Response(200, (("Content-Type", "application/json"),)).with_json(fake)
        resp = self.forward(request, upstream)
        if request.endpoint != "versions/write" or error_code(resp) != "not_after_latest" \
                or not _NAME.fullmatch(str(body.get("version"))):
            return resp
        versions = committed(upstream, request, body.get("artifact", ""))
        if not versions or versions[-1]["step"] != int(body["version"][5:]) + 1:
            return resp
        shadow = self.forward(request.with_json({**body, "version": SHADOW}), upstream)
        if not shadow.ok:
            return resp
        files = [{k: f.get(k) for k in ("name", "size", "sha256")}
                 for f in body.get("files") or [] if isinstance(f, dict)]
        fake = {**versions[-1], "version": body["version"], "step": int(body["version"][5:]),
                "files": files, "size": sum(int(f["size"] or 0) for f in files)}
        with self.lock:
            self.state.setdefault("shadows", {})[obj(shadow).get("upload")] = fake
        return shadow
