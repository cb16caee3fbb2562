"""Mutants of READ-3 and READ-4: ranges on the data plane, and what a signed URL admits.

Each works on data-plane requests only, tied to the file they fetch by :class:`Watching`.
"""

from __future__ import annotations

import time

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.m_read import (
    MIB,
    Watching,
    api_call,
    bytes_reply,
    obj,
    parse_range,
    request_key,
    resend,
    unsatisfiable,
    url_key,
    with_headers,
)


class RangeMutant(Watching):
    """Acts on GET/HEAD of a known file that carry a ``Range`` header."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if not info or request.method not in ("GET", "HEAD") or not request.header("Range") \
                or not isinstance(info.get("size"), int):
            return self.forward(request, upstream)
        span = parse_range(request.header("Range"), info["size"])
        return self.ranged(request, upstream, info, span)

    def ranged(self, request: Request, upstream: Upstream, info: dict,
               span: tuple[int, int] | None | str) -> Response:
        return self.forward(request, upstream)


# --- READ-3.a ----------------------------------------------------------------------------


@mutant
class SingleMidByteGivesTwo(RangeMutant):
    """``bytes=a-a`` inside the file (not its first or last byte) answers two bytes."""

    name = "read-range-single-mid-byte-gives-two"
    clause = "READ-3.a"
    summary = "a one-byte range bytes=a-a in the middle of a file answers bytes a..a+1"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        if isinstance(span, tuple) and span[0] == span[1] and 0 < span[0] < info["size"] - 1:
            a = span[0]
            return upstream.send(request.with_header("Range", f"bytes={a}-{a + 1}"))
        return self.forward(request, upstream)


@mutant
class OverlongEndRefused(RangeMutant):
    """A range that starts inside the file but ends past it gets 416 instead of the bytes
    up to the end (206)."""

    name = "read-range-end-past-size-refused"
    clause = "READ-3.a"
    summary = "bytes=a-b with a inside the file and b past its end answers 416"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        raw = (request.header("Range") or "").partition("-")[2]
        if isinstance(span, tuple) and raw.isdigit() and int(raw) >= info["size"]:
            return unsatisfiable(info["size"])
        return self.forward(request, upstream)


@mutant
class DeepOffsetShifted(RangeMutant):
    """A range starting past the first MiB is served one byte early (the Content-Range
    still names the asked range), so parallel downloads of big files reassemble wrong."""

    name = "read-range-past-first-mib-shifted-by-one"
    clause = "READ-3.a"
    summary = "ranges starting after 1 MiB return the bytes one position earlier"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        if not (isinstance(span, tuple) and span[0] >= MIB):
            return self.forward(request, upstream)
        a, b = span
        got = upstream.send(request.with_header("Range", f"bytes={a - 1}-{b - 1}"))
        if got.status != 206:
            return got
        return with_headers(got, Content_Range=f"bytes {a}-{b}/{info['size']}")


@mutant
class HeadOfSecondFileIgnoresRange(RangeMutant):
    """A ranged HEAD of any file but the first of a version answers 200 for the whole
    file, without ``Content-Range`` (GETs and the first file are right)."""

    name = "read-range-ignored-on-head-of-second-file"
    clause = "READ-3.a"
    summary = "ranged HEAD of a version's second file answers 200 without Content-Range"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        if request.method == "HEAD" and info["index"] >= 1 and isinstance(span, tuple):
            whole = upstream.send(request.with_header("Range", None))
            return whole if whole.status != 200 else with_headers(whole, Content_Range=None)
        return self.forward(request, upstream)


# --- READ-3.b ----------------------------------------------------------------------------


@mutant
class BeyondEndGivesWhole(RangeMutant):
    """A range that starts strictly past the end answers 200 with the whole file (a range
    starting exactly at the end is still 416)."""

    name = "read-range-start-beyond-end-gives-whole-file"
    clause = "READ-3.b"
    summary = "a range starting after the end (not at it) answers 200 and the whole file"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        start = (request.header("Range") or "").removeprefix("bytes=").partition("-")[0]
        if span is None and start.isdigit() and int(start) > info["size"] > 0:
            return upstream.send(request.with_header("Range", None))
        return self.forward(request, upstream)


@mutant
class EmptyFileRangeOk(RangeMutant):
    """Any range on an empty file answers 200 with no bytes instead of 416."""

    name = "read-range-on-empty-file-gives-200"
    clause = "READ-3.b"
    summary = "a ranged GET or HEAD of a zero-byte file answers 200 instead of 416"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        if info["size"] == 0:
            return bytes_reply(b"", 0, None, request.method == "HEAD")
        return self.forward(request, upstream)


@mutant
class UnsatisfiableHeadOk(RangeMutant):
    """A HEAD with a range that cannot be satisfied answers 200 (GETs get 416)."""

    name = "read-range-unsatisfiable-head-gives-200"
    clause = "READ-3.b"
    summary = "HEAD with a range past the end answers 200 for the whole file"

    def ranged(self, request, upstream, info, span):  # noqa: ANN001, ANN201
        if request.method == "HEAD" and span is None:
            return upstream.send(request.with_header("Range", None))
        return self.forward(request, upstream)


# --- READ-4 ------------------------------------------------------------------------------


class SignatureMutant(Watching):
    """Admits a data-plane request whose exact URL was never issued when ``accept`` finds
    an issued URL it resembles, by sending that one instead."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        if request.kind != "data" or self.info(request) is not None:
            return self.forward(request, upstream)
        path, query = request_key(request)
        for info in self.known():
            kpath, kquery = url_key(info["url"])
            if self.accept(request, path, query, info, kpath, kquery):
                return self.forward(resend(request, info["url"]), upstream)
        return self.forward(request, upstream)

    def accept(self, request: Request, path: str, query: str, info: dict, kpath: str,
               kquery: str) -> bool:
        return False


@mutant
class SignatureAcrossVersions(SignatureMutant):
    """A GET URL of one version's file, moved onto the path of the same file name in
    another version of the artifact, is served (the path check skips the version part)."""

    name = "read-sig-reused-across-versions-of-same-file"
    clause = "READ-4.a"
    summary = "a file's signature works on the same file name in another version"

    def accept(self, request, path, query, info, kpath, kquery):  # noqa: ANN001, ANN201
        if kpath != path or info["method"] != "GET":
            return False
        signed = [i for i in self.known(method="GET") if url_key(i["url"])[1] == query]
        return any(i["artifact"] == info["artifact"] and i["name"] == info["name"]
                   and i["version"] != info["version"] for i in signed)


@mutant
class HeadPathUnchecked(SignatureMutant):
    """A HEAD with any issued GET signature is answered for any issued path."""

    name = "read-sig-path-unchecked-for-head"
    clause = "READ-4.a"
    summary = "HEAD with a valid signature of another file is answered for this path"

    def accept(self, request, path, query, info, kpath, kquery):  # noqa: ANN001, ANN201
        if request.method != "HEAD" or kpath != path or info["method"] != "GET":
            return False
        return any(url_key(i["url"])[1] == query for i in self.known(method="GET"))


def _signature(query: str) -> str:
    return max((v for v in query.split("&")), key=len, default="")


@mutant
class LastCharIgnored(SignatureMutant):
    """The signature check ignores its last character."""

    name = "read-sig-last-char-ignored"
    clause = "READ-4.b"
    summary = "a signature that differs only in its last character is accepted"

    def accept(self, request, path, query, info, kpath, kquery):  # noqa: ANN001, ANN201
        return kpath == path and len(query) == len(kquery) and query[:-1] == kquery[:-1]


@mutant
class CaseInsensitiveSignature(SignatureMutant):
    """Signatures are compared case-insensitively (base64 is case-sensitive)."""

    name = "read-sig-compared-case-insensitively"
    clause = "READ-4.b"
    summary = "a signature with letters in another case is accepted"

    def accept(self, request, path, query, info, kpath, kquery):  # noqa: ANN001, ANN201
        return kpath == path and query.lower() == kquery.lower()


@mutant
class TruncatedSignature(SignatureMutant):
    """A signature cut short by up to 4 characters is accepted (a prefix compare)."""

    name = "read-sig-truncated-accepted"
    clause = "READ-4.b"
    summary = "a signature missing its last 1-4 characters is accepted"

    def accept(self, request, path, query, info, kpath, kquery):  # noqa: ANN001, ANN201
        mine, theirs = _signature(query), _signature(kquery)
        return kpath == path and len(theirs) - 4 <= len(mine) < len(theirs) \
            and theirs.startswith(mine) and len(query.split("&")) == len(kquery.split("&"))


class ExpiredAccepted(Watching):
    """When an issued URL is refused after its declared expiry and ``admits`` the request,
    a fresh URL for the same file is fetched with the key that read it, and used."""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        if resp.status != 403 or not info or info["method"] != "GET" or not info["auth"] \
                or not info["expires"] or info["expires"] > time.time() \
                or not self.admits(request):
            return resp
        like = Request("GET", "/", headers=(("Authorization", info["auth"]),))
        fresh = api_call(upstream, like, "GET", "versions/read", {
            "artifact": info["artifact"], "version": info["version"], "urls": "1",
            "place": info["place"]})
        for f in obj(fresh).get("files") or [] if fresh.ok else []:
            if f.get("name") == info["name"] and f.get("url"):
                return upstream.send(resend(request, f["url"]))
        return resp

    def admits(self, request: Request) -> bool:
        return False


@mutant
class ExpiredHeadAccepted(ExpiredAccepted):
    """An expired URL still answers HEAD."""

    name = "read-expired-url-accepted-for-head"
    clause = "READ-4.c"
    summary = "HEAD of an expired signed URL is answered instead of 403"

    def admits(self, request: Request) -> bool:
        return request.method == "HEAD"


@mutant
class ExpiredRangeAccepted(ExpiredAccepted):
    """An expired URL still serves ranged GETs (a parallel download that started in time
    is let to finish)."""

    name = "read-expired-url-accepted-for-ranged-get"
    clause = "READ-4.c"
    summary = "a ranged GET of an expired signed URL is served instead of 403"

    def admits(self, request: Request) -> bool:
        return request.method == "GET" and bool(request.header("Range"))
