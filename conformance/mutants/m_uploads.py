"""Mutants of VER-4: complete uploads, invisible staging, unknown uploads, size limits.

A mutant that "accepts" a damaged upload does what such an implementation would store: it
writes the version again upstream with the files as they really arrived and commits that,
so the version that shows is consistent with its own bytes, just not with what was declared.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.m_read import (
    api_call,
    committed,
    error_code,
    obj,
    resend,
    target_artifact,
)
from conformance.mutants.m_versions import UploadBook

LIMIT_PROBE = 0


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Recommitting(UploadBook):
    """On a commit refused as ``incomplete``, ``received`` may pick the files to keep (as
    they arrived); they are then written, PUT and committed again under the same token."""

    def received(self, declared: list[dict[str, Any]], bodies: list[bytes | None]
                 ) -> list[int] | None:
        return None

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        sent = obj(request)
        up = self.upload(sent.get("upload")) if request.endpoint == "versions/commit" else None
        if not up or error_code(resp) != "incomplete":
            return resp
        declared = [f for f in up["files"] if isinstance(f, dict)]
        bodies = [self.put_body(up["urls"].get(f.get("name"))) for f in declared]
        keep = self.received(declared, bodies)
        if not keep:
            return resp
        files = {declared[i]["name"]: bodies[i] or b"" for i in keep}
        again = api_call(upstream, request, "POST", "versions/write", body={
            "artifact": up["artifact"], "token": sent.get("token"), "version": up["version"],
            "files": [{"name": n, "size": len(d), "sha256": _sha(d)} for n, d in files.items()]})
        if not again.ok:
            return resp
        for f in obj(again).get("files") or []:
            put = upstream.send(resend(Request("PUT", "/", body=files[f["name"]]), f["url"]))
            if not put.ok:
                return resp
        done = api_call(upstream, request, "POST", "versions/commit", body={
            "artifact": up["artifact"], "token": sent.get("token"),
            "upload": obj(again).get("upload")})
        return done if done.ok else resp


def _exact(spec: dict[str, Any], body: bytes | None) -> bool:
    return body is not None and len(body) == spec.get("size") and _sha(body) == spec.get("sha256")


# --- VER-4.a -----------------------------------------------------------------------------


@mutant
class EmptyFilesNeedNoPut(UploadBook):
    """A declared empty file counts as uploaded even if it was never PUT."""

    name = "ver-commit-counts-unput-empty-file-as-uploaded"
    clause = "VER-4.a"
    summary = "a commit succeeds although a declared zero-byte file was never PUT"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        up = self.upload(obj(request).get("upload"))
        if request.endpoint == "versions/commit" and up:
            for f in up["files"]:
                url = up["urls"].get(f.get("name"))
                if f.get("size") == 0 and url and self.put_body(url) is None:
                    self.forward(resend(Request("PUT", "/", body=b""), url), upstream)
        return self.forward(request, upstream)


@mutant
class MissingLaterFilesDropped(Recommitting):
    """A commit whose first file arrived but later files never did commits the files that
    arrived; the missing ones are silently left out of the version."""

    name = "ver-commit-drops-never-put-later-files"
    clause = "VER-4.a"
    summary = "a commit with later files never PUT commits without them"

    def received(self, declared, bodies):  # noqa: ANN001, ANN201
        if len(declared) < 2 or not _exact(declared[0], bodies[0]) or None not in bodies:
            return None
        if any(b is not None and not _exact(d, b)
               for d, b in zip(declared, bodies, strict=True)):
            return None
        return [i for i, b in enumerate(bodies) if b is not None]


# --- VER-4.b -----------------------------------------------------------------------------


@mutant
class OneByteShortAccepted(Recommitting):
    """A file that arrived exactly one byte short is committed as it arrived."""

    name = "ver-commit-accepts-file-one-byte-short"
    clause = "VER-4.b"
    summary = "a PUT one byte shorter than declared still commits (with what arrived)"

    def received(self, declared, bodies):  # noqa: ANN001, ANN201
        if None in bodies:
            return None
        pairs = list(zip(declared, bodies, strict=True))
        short = [len(b) == d.get("size", 0) - 1 for d, b in pairs]
        if not any(short) or not all(s or _exact(d, b) for s, (d, b) in zip(short, pairs,
                                                                             strict=True)):
            return None
        return list(range(len(declared)))


@mutant
class ShaOfFirstFileOnly(Recommitting):
    """Only the first file's sha256 is checked; later files need only the right size."""

    name = "ver-commit-checks-sha-of-first-file-only"
    clause = "VER-4.b"
    summary = "a later file with the declared size but other bytes still commits"

    def received(self, declared, bodies):  # noqa: ANN001, ANN201
        if None in bodies or not _exact(declared[0], bodies[0]):
            return None
        if any(len(b) != d.get("size") for d, b in zip(declared, bodies, strict=True)):
            return None
        return list(range(len(declared)))


# --- VER-4.c -----------------------------------------------------------------------------


@mutant
class StagedHasCheckpoints(UploadBook):
    """A fresh open is refused with ``has_checkpoints`` when the artifact has no committed
    version but an upload whose files were all PUT."""

    name = "ver-staged-upload-counts-for-has-checkpoints"
    clause = "VER-4.c"
    summary = "a fully uploaded but uncommitted version makes a fresh open 409"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        body = obj(request)
        if request.endpoint == "artifacts/open" and isinstance(body, dict) \
                and body.get("resume") is None and self.staged(body.get("artifact", "")) \
                and not committed(upstream, request, body.get("artifact", "")):
            return Response.error(409, "has_checkpoints", f"{body['artifact']} has versions")
        return self.forward(request, upstream)


def _later_staged(book: UploadBook, artifact: str, latest: str | None) -> list[str]:
    names = {u["version"] for u in book.staged(artifact) if isinstance(u["version"], str)}
    return sorted(n for n in names if latest is None or n > latest)


@mutant
class StagedLatestAfterTwo(UploadBook):
    """Once an artifact has 2 or more committed versions, ``artifacts/read`` counts a
    fully uploaded later version as the latest before it is committed."""

    name = "ver-staged-upload-is-latest-after-2-commits"
    clause = "VER-4.c"
    summary = "with 2+ commits, artifacts/read names a staged upload as latest"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        body = resp.json()
        if request.endpoint != "artifacts/read" or not resp.ok or not isinstance(body, dict) \
                or not isinstance(body.get("versions"), int) or body["versions"] < 2:
            return resp
        later = _later_staged(self, body.get("artifact", ""), body.get("latest"))
        if not later:
            return resp
        return resp.with_json({**body, "latest": later[-1], "versions": body["versions"] +
                               len(later)})


@mutant
class StagedListed(UploadBook):
    """``versions/list`` shows fully uploaded later versions before they are committed."""

    name = "ver-staged-upload-listed-when-fully-put"
    clause = "VER-4.c"
    summary = "versions/list shows an uncommitted upload once all its files were PUT"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        body = resp.json()
        rows = body.get("versions") if isinstance(body, dict) else None
        if request.endpoint != "versions/list" or not resp.ok or not rows:
            return resp
        artifact = request.arg("artifact") or ""
        staged = {u["version"]: u for u in self.staged(artifact)}
        for name in _later_staged(self, artifact, rows[-1].get("version")):
            size = sum(int(f.get("size") or 0) for f in staged[name]["files"])
            rows.append({**rows[-1], "version": name, "step": int(name[5:]), "size": size})
        return resp.with_json(body)


# --- VER-4.d -----------------------------------------------------------------------------


@mutant
class RealLookingUploadIncomplete(UploadBook):
    """An unknown upload id shaped like a real one (same prefix and length) is taken for an
    upload with no files yet: 409 ``incomplete`` instead of 404."""

    name = "ver-unknown-upload-shaped-like-real-gets-incomplete"
    clause = "VER-4.d"
    summary = "committing an unknown but real-looking upload id answers 409 incomplete"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        wanted = str(obj(request).get("upload"))
        if request.endpoint != "versions/commit" or resp.status != 404:
            return resp
        with self.lock:
            real = list(self.state.get("uploads", {}))
        if any(len(r) == len(wanted) and r[:3] == wanted[:3] for r in real):
            return Response.error(409, "incomplete", "no file of this upload has arrived")
        return resp


@mutant
class OtherArtifactsUploadInvalid(UploadBook):
    """Committing an upload of another artifact gets 400 instead of 404."""

    name = "ver-upload-of-other-artifact-gives-400"
    clause = "VER-4.d"
    summary = "committing another artifact's upload answers 400 invalid_argument"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        sent = obj(request)
        up = self.upload(sent.get("upload"))
        if request.endpoint == "versions/commit" and resp.status == 404 and up \
                and up["artifact"] != target_artifact(request):
            return Response.error(400, "invalid_argument", "the upload is of another artifact")
        return resp


# --- VER-4.e -----------------------------------------------------------------------------


class LongPut(UploadBook):
    """A PUT longer than declared whose extra bytes ``tolerate`` is cut to the declared size."""

    def tolerate(self, extra: bytes) -> bool:
        return False

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "PUT" and request.method == "PUT" \
                and isinstance(info["size"], int) and len(request.body) > info["size"] \
                and self.tolerate(request.body[info["size"]:]):
            return self.forward(replace(request, body=request.body[:info["size"]]), upstream)
        return self.forward(request, upstream)


@mutant
class OneByteLonger(LongPut):
    """A PUT exactly one byte longer than declared is accepted (the extra byte dropped)."""

    name = "ver-put-one-byte-longer-accepted"
    clause = "VER-4.e"
    summary = "a PUT body one byte longer than declared is accepted"

    def tolerate(self, extra: bytes) -> bool:
        return len(extra) == 1


@mutant
class ZeroPaddingAccepted(LongPut):
    """A PUT longer than declared is accepted when the extra bytes are all zero."""

    name = "ver-put-longer-accepted-when-extra-is-zeros"
    clause = "VER-4.e"
    summary = "a PUT longer than declared is accepted if the extra bytes are NUL padding"

    def tolerate(self, extra: bytes) -> bool:
        return not extra.strip(b"\0")


@mutant
class LimitOnFirstFileOnly(UploadBook):
    """Only the first declared file is checked against the size limit."""

    name = "ver-size-limit-checked-on-first-file-only"
    clause = "VER-4.e"
    summary = "a write declaring an over-limit size for a later file is accepted"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        body = request.json()
        if request.endpoint != "versions/write" or error_code(resp) != "payload_too_large" \
                or not isinstance(body, dict) or len(body.get("files") or []) < 2:
            return resp
        files = [dict(f) for f in body["files"]]
        # The limit is not known from outside: shrink later files, largest first, until the
        # upstream takes the write (a real implementation would not have looked at them).
        for f in sorted(files[1:], key=lambda f: -int(f.get("size") or 0)):
            f["size"], f["sha256"] = LIMIT_PROBE, _sha(b"")
            again = self.forward(request.with_json({**body, "files": files}), upstream)
            if again.ok:
                return again
            if error_code(again) != "payload_too_large":
                break
        return resp
