"""Subtler mutants of VER-*, READ-* and AUTH-*: checks right in the common case and wrong
only for deep file paths, an upper-case version prefix, step 0, a rewrite of the latest
after a relaunch, a fork target with a staged upload, an empty declared file, a read with a
place, a range over the whole file, a signature of another artifact, or a bare ``Bearer``."""

from __future__ import annotations

from urllib.parse import parse_qsl

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.m_read import (
    Watching,
    committed,
    parse_range,
    request_key,
    resend,
    with_headers,
)
from conformance.mutants.m_versions import LenientFileName, _safe_segments, decoded
from conformance.mutants.tracking import Tracked, body_of, key_of, with_key

# --- VER-1 -------------------------------------------------------------------------------


@mutant
class DeepSegmentsUnchecked(LenientFileName):
    """Only the first three segments of a file name are checked: ``a/b/c/..`` passes."""

    name = "ver-file-name-segments-past-the-third-unchecked"
    clause = "VER-1.b"
    summary = "a '.', '..' or empty segment after the third segment of a file name is accepted"

    def allows(self, index: int, name: str) -> bool:
        parts = name.split("/")
        return len(parts) >= 4 and _safe_segments("/".join(parts[:3]))


@mutant
class UpperCasePrefixAccepted(Tracked):
    """A version name ``STEP-00000005`` or ``Step-00000005`` is taken as ``step-00000005``
    in writes (the prefix is compared case-insensitively)."""

    name = "ver-name-upper-case-prefix-accepted"
    clause = "VER-1.a"
    summary = "a write of 'STEP-' or 'Step-' and 8 digits is accepted as step-"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        body = body_of(request)
        version = body.get("version")
        if request.endpoint == "versions/write" and isinstance(version, str) \
                and version[:5].lower() == "step-" and version[:5] != "step-" \
                and len(version) == 13 and version[5:].isascii() and version[5:].isdigit():
            return request.with_json(dict(body, version="step-" + version[5:]))
        return None


# --- VER-2 -------------------------------------------------------------------------------


@mutant
class ExistsAfterRelaunchAsNotAfter(Tracked):
    """Rewriting the latest version's name with a token newer than the one that committed
    it answers 409 ``not_after_latest`` (the name check is per token)."""

    name = "ver-exists-of-latest-after-relaunch-reported-as-not-after-latest"
    clause = "VER-2.a"
    summary = "after a relaunch, writing the latest version's name answers not_after_latest"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint not in ("versions/write", "versions/commit") \
                or error_code(response) != "version_exists":
            return response
        with self.lock:
            first = self.state.get("by", {}).get((body.get("artifact"), body.get("version")))
        if request.endpoint == "versions/commit":
            with self.lock:
                up = self.t.uploads.get(body.get("upload"))
            version = up.write.get("version") if up else None
            with self.lock:
                first = self.state.get("by", {}).get((body.get("artifact"), version))
        if first and first != body.get("token"):
            return Response.error(409, "not_after_latest", "the step is not after the latest")
        return response

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        reply = response.json()
        if request.endpoint == "versions/commit" and response.ok and isinstance(reply, dict):
            self.state.setdefault("by", {})[(reply.get("artifact"), reply.get("version"))] = \
                body_of(request).get("token")


# --- VER-3 -------------------------------------------------------------------------------


@mutant
class StepZeroInvalid(Tracked):
    """A write of ``step-00000000`` on an artifact with versions is 400 instead of 409
    ``not_after_latest`` (step 0 is treated as malformed)."""

    name = "ver-step-zero-after-versions-gives-400"
    clause = "VER-3.a"
    summary = "writing step-00000000 on an artifact with versions answers 400, not 409"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/write" and body_of(request).get("version") \
                == "step-00000000" and error_code(response) == "not_after_latest":
            return Response.error(400, "invalid_argument", "step 0 is not a checkpoint")
        return response


# --- VER-4 -------------------------------------------------------------------------------


@mutant
class StagedUploadBlocksFork(Tracked):
    """A fork into an artifact holding a fully uploaded but uncommitted version is refused
    409 ``not_empty`` (the emptiness check counts staged uploads)."""

    name = "ver-staged-upload-makes-fork-target-not-empty"
    clause = "VER-4.c"
    summary = "a fork into an empty artifact with a fully PUT uncommitted upload is 409"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        resume = body_of(request).get("resume")
        if request.endpoint != "artifacts/open" or not isinstance(resume, str) \
                or not resume.startswith("o41://"):
            return None
        art = body_of(request).get("artifact")
        with self.lock:
            staged = [u for u in self.t.uploads.values() if u.artifact == art and u.complete
                      and u.upload not in self.state.get("done", set())]
        if staged and not committed(upstream, request, str(art)):
            return Response.error(409, "not_empty", "the artifact has versions")
        return None

    def observe(self, request: Request, response: Response) -> None:
        super().observe(request, response)
        if request.endpoint == "versions/commit" and response.ok:
            self.state.setdefault("done", set()).add(body_of(request).get("upload"))


@mutant
class OtherArtifactUploadCommittedThere(Tracked):
    """Committing another artifact's upload commits it into the artifact it belongs to."""

    name = "ver-upload-of-other-artifact-committed-into-its-own"
    clause = "VER-4.d"
    summary = "a commit naming another artifact's upload commits that upload there (200)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint != "versions/commit" or response.ok:
            return response
        with self.lock:
            up = self.t.uploads.get(body.get("upload"))
        if up is None or up.artifact == body.get("artifact"):
            return response
        again = request.with_json({"artifact": up.artifact, "token": up.token,
                                   "upload": up.upload})
        landed = upstream.send(with_key(again, up.key) if up.key else again)
        return landed if landed.ok else response


@mutant
class EmptyFileTakesAnyBody(Watching):
    """A PUT to the URL of a file declared empty is accepted whatever its length (the body
    is dropped): the length check is skipped for size 0."""

    name = "ver-put-body-to-empty-declared-file-accepted"
    clause = "VER-4.e"
    summary = "a PUT with a body to a file declared with size 0 is accepted"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "PUT" and info.get("size") == 0 and request.body:
            return self.forward(Request(request.method, request.path, request.query,
                                        request.headers, b""), upstream)
        return self.forward(request, upstream)


# --- READ-1 ------------------------------------------------------------------------------


@mutant
class LatestWithPlaceStale(Tracked):
    """A read of latest with a ``place`` answers the version it answered first for that
    artifact and place (a per-place cache that is never refreshed)."""

    name = "read-latest-with-place-stale"
    clause = "READ-1.a"
    summary = "a latest read with place= keeps answering the version it first answered"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/read" or not response.ok or not request.arg("place") \
                or request.arg("version", "latest") != "latest" or request.arg("urls") == "1":
            return response
        key = (request.arg("artifact"), request.arg("place"))
        with self.lock:
            return self.state.setdefault(("cache",) + key, response)


@mutant
class StepZeroIsLatest(Tracked):
    """``version=step-00000000`` reads the latest version (step 0 means 'no step')."""

    name = "read-step-zero-gives-latest"
    clause = "READ-1.b"
    summary = "a read of step-00000000, never committed, answers the latest version"

    def before(self, request: Request, upstream: Upstream) -> Request | None:
        if request.endpoint == "versions/read" and request.arg("version") == "step-00000000":
            return request.with_query(version="latest")
        return None


# --- READ-3 ------------------------------------------------------------------------------


@mutant
class WholeFileRangeGives200(Watching):
    """A range covering the whole file (``bytes=0-(size-1)``) answers 200 without
    ``Content-Range``."""

    name = "read-range-of-whole-file-answers-200"
    clause = "READ-3.a"
    summary = "bytes=0-<last> answers 200 with no Content-Range instead of 206"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        if info and resp.status == 206 and isinstance(info.get("size"), int):
            span = parse_range(request.header("Range"), info["size"])
            if span == (0, info["size"] - 1) and info["size"] > 0:
                return with_headers(resp.with_body(resp.body, 200), Content_Range=None)
        return resp


@mutant
class RangeStartingAtSizeEmpty(Watching):
    """A range starting exactly at the file's size answers 206 with no bytes, not 416."""

    name = "read-range-starting-at-size-gives-empty-206"
    clause = "READ-3.b"
    summary = "bytes=<size>-<n> answers 206 with an empty body instead of 416"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        raw = (request.header("Range") or "").removeprefix("bytes=").partition("-")[0]
        if info and resp.status == 416 and raw.isdigit() and int(raw) == info.get("size") \
                and info["size"] > 0:
            size = info["size"]
            return Response(206, (("Content-Range", f"bytes {size}-{size}/{size}"),
                                  ("Content-Type", "application/octet-stream")), b"")
        return resp


# --- READ-4 ------------------------------------------------------------------------------


@mutant
class SignatureOfOtherArtifact(Watching):
    """A signature is valid for any artifact's file of the same version and file name
    (the artifact is left out of what is signed)."""

    name = "read-sig-valid-for-same-version-and-file-of-other-artifact"
    clause = "READ-4.a"
    summary = "a URL's signature works on the same version and file name of another artifact"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        if request.kind != "data" or resp.status != 403:
            return resp
        query = request_key(request)[1]
        with self.lock:
            signer = [i for k, i in self.urls.items() if k[1] == query]
            owner = [i for k, i in self.urls.items() if k[0] == request.path
                     and i["method"] == request.method]
        if not signer or not owner:
            return resp
        a, b = signer[0], owner[-1]
        if a["artifact"] != b["artifact"] and (a["version"], a["name"]) == (b["version"],
                                                                          b["name"]):
            return self.forward(resend(request, b["url"]), upstream)
        return resp


@mutant
class SignatureWithSuffix(Watching):
    """A signature with characters appended is accepted (compared as a prefix)."""

    name = "read-sig-with-extra-characters-appended-accepted"
    clause = "READ-4.b"
    summary = "a signature with characters appended to it is accepted"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        if request.kind != "data" or resp.status != 403:
            return resp
        sent = dict(request.query)
        with self.lock:
            same = [i for k, i in self.urls.items() if k[0] == request.path]
        for info in same:
            real = dict(parse_qsl(info["url"].partition("?")[2], keep_blank_values=True))
            if set(real) == set(sent) and all(sent[k].startswith(v) for k, v in real.items()) \
                    and any(sent[k] != v for k, v in real.items()):
                return self.forward(resend(request, info["url"]), upstream)
        return resp


# --- AUTH --------------------------------------------------------------------------------


@mutant
class BareBearerOnUsage(Tracked):
    """``usage/read`` with ``Authorization: Bearer`` and no key answers as a known key."""

    name = "auth-bare-bearer-answered-on-usage"
    clause = "AUTH-1.a"
    summary = "usage/read with 'Authorization: Bearer' and no key is answered"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        auth = (request.header("Authorization") or "x").strip()
        if request.endpoint != "usage/read" or response.status != 401 or auth != "Bearer":
            return response
        with self.lock:
            key = self.t.good_key()
        again = upstream.send(with_key(request, key)) if key else response
        return again if again.ok else response


@mutant
class RefusedKeyWritesWithToken(Tracked):
    """A write by a key without write access is accepted when its token is valid (the
    write trusts the token and skips the key's scope)."""

    name = "auth-read-key-write-with-valid-token-accepted"
    clause = "AUTH-3.a"
    summary = "a write by a read-only key carrying a writer's valid token is accepted"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/write" or response.status != 403:
            return response
        with self.lock:
            info = self.t.tokens.get(body_of(request).get("token"))
        if info is None or not info.key or info.key == key_of(request):
            return response
        again = upstream.send(with_key(request, info.key))
        with self.lock:
            self.observe(request, again)
        return decoded(again) if again.ok else response


