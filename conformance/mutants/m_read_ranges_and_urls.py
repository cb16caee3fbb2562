"""Mutants of READ-1..4 and the data plane written from the contract alone: a
``Content-Range`` off by one or with the wrong total, the last byte unsatisfiable, a URL
of an unusual file name not found, a read URL that takes a PUT, an unknown artifact listed
as empty, latest hidden after a relaunch, single-use URLs, a ranged HEAD's length, and a
deleted version's URLs serving a later file of the same name."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.m_read import (
    Watching,
    bytes_reply,
    parse_range,
    unsatisfiable,
    with_headers,
)
from conformance.mutants.tracking import Tracked

# --- READ-3 ------------------------------------------------------------------------------


class _Ranged(Watching):
    """Rewrites the 206 replies of known read URLs with :meth:`rewrite`."""

    def rewrite(self, resp: Response, span: tuple[int, int], size: int,
                asked: str) -> Response:
        return resp

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = self.forward(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        size = info.get("size") if info else None
        if resp.status != 206 or not isinstance(size, int) \
                or request.method not in ("GET", "HEAD"):
            return resp
        span = parse_range(request.header("Range"), size)
        if not isinstance(span, tuple):
            return resp
        return self.rewrite(resp, span, size, request.header("Range") or "")


@mutant
class ContentRangeEndExclusive(_Ranged):
    """``Content-Range`` names the end one past the last byte sent (an exclusive end)."""

    name = "read-content-range-end-one-past-the-last-byte"
    clause = "READ-3.a"
    summary = "a 206 says Content-Range bytes a-(b+1)/size for bytes a..b"

    def rewrite(self, resp: Response, span: tuple[int, int], size: int,
                asked: str) -> Response:
        return with_headers(resp, Content_Range=f"bytes {span[0]}-{span[1] + 1}/{size}")


@mutant
class ContentRangeTotalIsTheSpan(_Ranged):
    """``Content-Range`` gives the length of the range as the file's total length."""

    name = "read-content-range-total-is-the-range-length"
    clause = "READ-3.a"
    summary = "a 206 says Content-Range bytes a-b/(b-a+1) instead of bytes a-b/size"

    def rewrite(self, resp: Response, span: tuple[int, int], size: int,
                asked: str) -> Response:
        a, b = span
        return with_headers(resp, Content_Range=f"bytes {a}-{b}/{b - a + 1}")


@mutant
class CutRangeAnnouncesAskedEnd(_Ranged):
    """A range ending past the file is cut, but ``Content-Range`` repeats the asked end."""

    name = "read-cut-range-announces-the-asked-end"
    clause = "READ-3.a"
    summary = "bytes=a-b past the end sends a..size-1 but says Content-Range bytes a-b/size"

    def rewrite(self, resp: Response, span: tuple[int, int], size: int,
                asked: str) -> Response:
        end = asked.strip().removeprefix("bytes=").partition("-")[2]
        if not end.isdigit() or int(end) <= span[1]:
            return resp
        return with_headers(resp, Content_Range=f"bytes {span[0]}-{end}/{size}")


@mutant
class LastByteUnsatisfiable(Watching):
    """A range starting at the file's last byte is taken as past the end (``>=`` on the
    last index): 416."""

    name = "read-range-starting-at-the-last-byte-gets-416"
    clause = "READ-3.a"
    summary = "bytes=(size-1)-b answers 416 instead of 206 and the last byte"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        size = info.get("size") if info else None
        raw = (request.header("Range") or "").strip().removeprefix("bytes=").partition("-")[0]
        if isinstance(size, int) and size > 1 and raw.isdigit() and int(raw) == size - 1 \
                and request.method in ("GET", "HEAD"):
            return unsatisfiable(size)
        return self.forward(request, upstream)


# --- READ-2 ------------------------------------------------------------------------------


@mutant
class UnusualNameUrlNotFound(Watching):
    """A read URL of a file whose name has a space or a non-ASCII letter is not found
    (the name is decoded twice on the way to the store)."""

    name = "read-url-of-a-file-name-with-a-space-or-non-ascii-404"
    clause = "READ-2.a"
    summary = "a plain GET of the URL of 'my file.bin' or 'données.bin' answers 404"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        name = info.get("name") if info else None
        if info and info["method"] == "GET" and isinstance(name, str) \
                and (" " in name or not name.isascii()):
            return Response.error(404, "not_found", "no such file")
        return self.forward(request, upstream)


# --- VER-2.b: a read URL that takes a PUT -----------------------------------------------


@mutant
class ReadUrlTakesAPut(Watching):
    """The signature does not cover the method: a PUT to a committed file's read URL
    answers 200 and from then on that file serves the new bytes."""

    name = "ver-put-to-a-read-url-replaces-the-committed-file"
    clause = "VER-2.b"
    summary = "a PUT to a version's GET URL answers 200 and changes the file's bytes"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if not info or info["method"] != "GET":
            return self.forward(request, upstream)
        key = (info["artifact"], info["version"], info["name"])
        if request.method == "PUT":
            with self.lock:
                self.state.setdefault("over", {})[key] = request.body
            return Response(200, (("Content-Type", "application/json"),)).with_json({})
        with self.lock:
            body = self.state.get("over", {}).get(key)
        if body is None or request.method not in ("GET", "HEAD"):
            return self.forward(request, upstream)
        span = parse_range(request.header("Range"), len(body))
        if span is None:
            return unsatisfiable(len(body))
        if span == "none":
            return bytes_reply(body, len(body), None, request.method == "HEAD")
        a, b = span  # type: ignore[misc]
        return bytes_reply(body[a:b + 1], len(body), (a, b), request.method == "HEAD")


# --- READ-1 ------------------------------------------------------------------------------


@mutant
class UnknownArtifactListsEmpty(Tracked):
    """``versions/list`` of an artifact that does not exist answers an empty list."""

    name = "read-list-of-an-unknown-artifact-gives-an-empty-list"
    clause = "READ-1.b"
    summary = "versions/list of a missing artifact answers 200 {versions: []} instead of 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint == "versions/list" and response.status == 404:
            return Response(200, (("Content-Type", "application/json"),)).with_json(
                {"versions": []})
        return response


@mutant
class LatestOfAnOlderEpochHidden(Tracked):
    """A read of latest looks among the versions of the newest epoch only: after a
    relaunch it is 404 until the new box commits."""

    name = "read-latest-after-a-relaunch-404-until-the-new-box-commits"
    clause = "READ-1.a"
    summary = "versions/read of latest answers 404 while the latest is of an older epoch"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data: Any = response.json() if response.ok else None
        if request.endpoint != "versions/read" or not isinstance(data, dict) \
                or request.arg("version", "latest") != "latest":
            return response
        with self.lock:
            newest = self.t.newest.get(str(request.arg("artifact")))
        epoch = data.get("epoch")
        if newest is None or not isinstance(epoch, int) or epoch >= newest.epoch:
            return response
        return Response.error(404, "not_found", "no version yet")


# --- READ-4.e ----------------------------------------------------------------------------


@mutant
class PlainGetUrlsSingleUse(Watching):
    """A read URL serves one whole-file GET; the next whole-file GET of it gets 403
    (ranged GETs, the parallel load, still work)."""

    name = "read-url-refused-after-one-whole-file-get"
    clause = "READ-4.e"
    summary = "a second unranged GET of a read URL gets 403 before the URL's expiry"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if not info or info["method"] != "GET" or request.method != "GET" \
                or request.header("Range"):
            return self.forward(request, upstream)
        key = (request.path, tuple(sorted(request.query)))
        with self.lock:
            used = self.state.setdefault("used", set())
            again = key in used
        if again:
            return Response.error(403, "forbidden", "the URL was used")
        resp = self.forward(request, upstream)
        if resp.ok:
            with self.lock:
                used.add(key)
        return resp


@mutant
class RangedHeadLengthOfTheFile(_Ranged):
    """A ranged HEAD answers 206 and the right ``Content-Range`` but the whole file's
    ``Content-Length`` (the length computed before the range was applied)."""

    name = "read-ranged-head-gives-the-whole-files-content-length"
    clause = "READ-3.a"
    summary = "HEAD with Range: bytes=a-b answers Content-Length of the whole file"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = super().handle(request, upstream)
        info = self.info(request) if request.kind == "data" else None
        size = info.get("size") if info else None
        if request.method == "HEAD" and resp.status == 206 and isinstance(size, int):
            return with_headers(resp, Content_Length=str(size))
        return resp


@mutant
class DeletedSlotReused(Watching):
    """A deleted version's storage is freed at once and a later upload of a file of the same
    name in that artifact takes its place: URLs given out before the delete serve the new
    bytes."""

    name = "ver-deleted-versions-urls-serve-a-later-file-of-the-same-name"
    clause = "VER-7.c"
    summary = "after a delete, a new same-named file's PUT is served by the deleted one's URLs"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        info = self.info(request) if request.kind == "data" else None
        if info and info["method"] == "PUT" and request.method == "PUT":
            resp = self.forward(request, upstream)
            if resp.ok:
                with self.lock:
                    seq = self.state["seq"] = self.state.get("seq", 0) + 1
                    self.state.setdefault("puts", {})[(info["artifact"], info["name"])] = \
                        (seq, request.body)
            return resp
        if request.endpoint == "versions/delete" and request.method == "POST":
            resp = self.forward(request, upstream)
            body = request.json()
            if resp.ok and isinstance(body, dict):
                with self.lock:
                    seq = self.state["seq"] = self.state.get("seq", 0) + 1
                    self.state.setdefault("gone", {})[(body.get("artifact"),
                                                       body.get("version"))] = seq
            return resp
        if info and info["method"] == "GET" and request.method in ("GET", "HEAD"):
            with self.lock:
                gone = self.state.get("gone", {}).get((info["artifact"], info["version"]))
                put = self.state.get("puts", {}).get((info["artifact"], info["name"]))
            if gone is not None and put is not None and put[0] > gone:
                data = put[1]
                span = parse_range(request.header("Range"), len(data))
                if span is None:
                    return unsatisfiable(len(data))
                if span == "none":
                    return bytes_reply(data, len(data), None, request.method == "HEAD")
                a, b = span  # type: ignore[misc]
                return bytes_reply(data[a:b + 1], len(data), (a, b), request.method == "HEAD")
        return self.forward(request, upstream)
