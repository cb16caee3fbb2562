"""Mutants of READ-4 (and of VER-2.b, VER-7.c on the data plane): what a signed URL admits,
how long it lives, and what it serves; one watched row each (rows.py), tied to the file a
data-plane request fetches by the URLs handed out.

``read-urls-unsigned-blob`` is the target of issue 19's wrong PASS: every data-plane URL is
``/blob/<base64 of artifact|version|name|...>``, with no signature and no expiry, so anyone
who knows an artifact's name can build the URL of any of its files. The proxy serves such a
URL for files it never handed out by asking the implementation, with a key it saw read, for
a fresh signed URL of that file.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from collections.abc import Hashable
from dataclasses import replace
from datetime import UTC
from datetime import datetime
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.legal_base import walk
from conformance.mutants.reads import api_call
from conformance.mutants.reads import obj
from conformance.mutants.reads import request_key
from conformance.mutants.reads import resend
from conformance.mutants.reads import served_range
from conformance.mutants.reads import url_key
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import noted
from conformance.mutants.rows import recalled
from conformance.mutants.rows import rows

Info = dict[str, Any]
Json = dict[str, Any]
#: Every exchange: a watched row sees them all (the replies that hand URLs out too).
ALL = On(kind="any", replies="any")
BLOB = "/blob/"


def url_of(turn: Turn) -> Info | None:
    """What a data-plane request's URL points at (None: not a URL handed out)."""
    if turn.seen is None or turn.request.kind != "data":
        return None
    return turn.seen.info(turn.request)


def _json_ok(body: Json) -> Response:
    return Response(200, (("Content-Type", "application/json"),)).with_json(body)


# --- READ-4.a-b: signatures -------------------------------------------------------------

Resembles = Callable[[Turn, str, str, Info, str, str], bool]


def resembling(accept: Resembles) -> Callable[[Turn], Response | None]:
    """A data-plane request whose exact URL was never handed out is admitted when
    ``accept`` (the turn, its path and query, a URL handed out, that URL's path and query)
    finds one it resembles: that URL is sent instead."""

    def serve(turn: Turn) -> Response | None:
        seen = turn.seen
        if seen is None or turn.request.kind != "data" or url_of(turn) is not None:
            return None
        path, query = request_key(turn.request)
        for info in seen.known():
            kpath, kquery = url_key(info["url"])
            if accept(turn, path, query, info, kpath, kquery):
                return seen.forward(resend(turn.request, info["url"]), turn.upstream)
        return None

    return serve


def _across_versions(turn: Turn, path: str, query: str, info: Info, kpath: str,
                     kquery: str) -> bool:
    """The path check skips the version part."""
    if kpath != path or info["method"] != "GET" or turn.seen is None:
        return False
    signed = [i for i in turn.seen.known(method="GET") if url_key(i["url"])[1] == query]
    return any(i["artifact"] == info["artifact"] and i["name"] == info["name"]
               and i["version"] != info["version"] for i in signed)


def _head_any_signature(turn: Turn, path: str, query: str, info: Info, kpath: str,
                        kquery: str) -> bool:
    if turn.request.method != "HEAD" or kpath != path or info["method"] != "GET" \
            or turn.seen is None:
        return False
    return any(url_key(i["url"])[1] == query for i in turn.seen.known(method="GET"))


def _signature(query: str) -> str:
    return max((v for v in query.split("&")), key=len, default="")


def _truncated(turn: Turn, path: str, query: str, info: Info, kpath: str,
               kquery: str) -> bool:
    mine, theirs = _signature(query), _signature(kquery)
    return kpath == path and len(theirs) - 4 <= len(mine) < len(theirs) \
        and theirs.startswith(mine) and len(query.split("&")) == len(kquery.split("&"))


def _slash_added(turn: Turn) -> Response | None:
    if turn.seen is None or turn.request.kind != "data" or url_of(turn) is not None:
        return None
    request = turn.request
    for path in {request.path.rstrip("/"), request.path.replace("//", "/")}:
        moved = replace(request, path=path)
        if path != request.path and turn.seen.info(moved) is not None:
            return turn.seen.forward(moved, turn.upstream)
    return None


# --- READ-4.c, e: expiry ------------------------------------------------------------------


def expired_admitted(admits: Callable[[Request], bool]) -> Bend:
    """A GET URL refused after its claimed expiry, for a request ``admits``, is served
    through a fresh URL of the same file, read with the key that read the first."""

    def bend(reply: Response, turn: Turn) -> Response:
        info = url_of(turn)
        if reply.status != 403 or not info or info["method"] != "GET" or not info["auth"] \
                or not info["expires"] or info["expires"] > time.time() \
                or not admits(turn.request):
            return reply
        like = Request("GET", "/", headers=(("Authorization", info["auth"]),))
        fresh = api_call(turn.upstream, like, "GET", "versions/read", {
            "artifact": info["artifact"], "version": info["version"], "urls": "1",
            "place": info["place"]})
        for f in obj(fresh).get("files") or [] if fresh.ok else []:
            if f.get("name") == info["name"] and f.get("url"):
                return turn.upstream.send(resend(turn.request, f["url"]))
        return reply

    return bend


def _urls(body: Any) -> list[str]:
    found: list[str] = []

    def pick(key: str | None, node: Any) -> Any:
        if key == "url" and isinstance(node, str):
            found.append(node)
        return node

    walk(body, pick)
    return found


def _an_hour_later(body: Any) -> Any:
    def later(key: str | None, node: Any) -> Any:
        if isinstance(node, dict) and isinstance(node.get("urls_expire_at"), str):
            try:
                t = datetime.fromisoformat(node["urls_expire_at"].replace("Z", "+00:00"))
            except ValueError:
                return node
            stamp = datetime.fromtimestamp(t.timestamp() + 3600, UTC)
            return {**node, "urls_expire_at": stamp.isoformat().replace("+00:00", "Z")}
        return node

    return walk(body, later)


ISSUERS = ("versions/read", "artifacts/open", "versions/write")


def ends_early(method: str, cut: float, issuers: tuple[str, ...] = ISSUERS,
               claim: Callable[[Any], Any] | None = None) -> tuple[Callable[[Turn],
                                                                            Response | None],
                                                                   Bend]:
    """The serve and bend of URLs of ``method`` (from replies of ``issuers``) that stop
    working ``cut`` of their claimed lifetime after they were handed out; those replies'
    JSON changed by ``claim``."""

    def serve(turn: Turn) -> Response | None:
        info = url_of(turn)
        if not info or info["method"] != method or not info["expires"]:
            return None
        with turn.lock:
            issued = turn.memory.get("issued", {}).get(info["url"])
        if issued and time.time() > issued + cut * (info["expires"] - issued):
            return Response.error(403, "forbidden", "signed URL has expired")
        return None

    def bend(reply: Response, turn: Turn) -> Response:
        if turn.request.kind != "api" or not reply.ok or turn.request.endpoint not in issuers:
            return reply
        with turn.lock:
            for url in _urls(reply.json()):
                turn.memory.setdefault("issued", {}).setdefault(url, time.time())
        return reply.with_json(claim(reply.json())) if claim else reply

    return serve, bend


def _expired_put_ok(reply: Response, turn: Turn) -> Response:
    info = url_of(turn)
    if reply.status == 403 and info and info["method"] == "PUT" and info["expires"] \
            and info["expires"] < time.time():
        return Response(200, (("Content-Type", "application/json"),), b"{}")
    return reply


def _whole_get(turn: Turn) -> Info | None:
    info = url_of(turn)
    if not info or info["method"] != "GET" or turn.request.method != "GET" \
            or turn.request.header("Range"):
        return None
    return info


def _used_twice(turn: Turn) -> Response | None:
    if _whole_get(turn) is None or not recalled("used", request_key(turn.request), turn):
        return None
    return Response.error(403, "forbidden", "the URL was used")


def _first_use(reply: Response, turn: Turn) -> set[Hashable]:
    return {request_key(turn.request)} if reply.ok and _whole_get(turn) is not None else set()


# --- READ-4.d: URLs without a signature -----------------------------------------------------


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def _blob_urls_handed_out(reply: Response, turn: Turn) -> Response:
    """Every URL of an API reply replaced by its blob (a read blob from two places serves
    through the URL of the last read: its metering)."""
    request = turn.request
    if request.kind != "api" or not reply.ok or reply.json() is None:
        return reply
    sent = obj(request)
    origin = str(getattr(turn.upstream, "public_origin", ""))
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
                with turn.lock:
                    turn.memory.setdefault("blobs", {})[blob] = {
                        "url": f["url"], "auth": request.header("Authorization")}
                    turn.memory["reader"] = request.header("Authorization")
                f = {**f, "url": f"{origin}{BLOB}{_b64(blob)}"}
            files.append(f)
        return {**node, "files": files}

    return reply.with_json(walk(reply.json(), move))


def _blob_served(turn: Turn) -> Response | None:
    request = turn.request
    if request.kind != "data" or not request.path.startswith(BLOB):
        return None
    blob = _unb64(request.path[len(BLOB):])
    parts = blob.split("|") if blob else []
    with turn.lock:
        held = turn.memory.get("blobs", {}).get(blob)
        reader = turn.memory.get("reader")
    if held is not None:
        got = turn.upstream.send(resend(request, held["url"]))
        if got.status != 403 or len(parts) != 3:
            return got
    if len(parts) != 3 or request.method not in ("GET", "HEAD"):
        return Response.error(403, "forbidden", "no such blob")
    artifact, version, name = parts
    like = Request("GET", "/", headers=(("Authorization", (held or {}).get("auth")
                                         or reader or ""),))
    fresh = api_call(turn.upstream, like, "GET", "versions/read", {
        "artifact": artifact, "version": version, "urls": "1"})
    for f in obj(fresh).get("files") or [] if fresh.ok else []:
        if isinstance(f, dict) and f.get("name") == name and f.get("url"):
            return turn.upstream.send(resend(request, f["url"]))
    return Response.error(403, "forbidden", "no such blob")


# --- VER-2.b and VER-7.c: what a read URL serves ------------------------------------------


def _put_to_read_url(turn: Turn) -> Response | None:
    """The signature does not cover the method: a PUT to a GET URL replaces the file."""
    info = url_of(turn)
    if not info or info["method"] != "GET":
        return None
    key = (info["artifact"], info["version"], info["name"])
    if turn.request.method == "PUT":
        with turn.lock:
            turn.memory.setdefault("over", {})[key] = turn.request.body
        return _json_ok({})
    with turn.lock:
        data = turn.memory.get("over", {}).get(key)
    if data is None or turn.request.method not in ("GET", "HEAD"):
        return None
    return served_range(turn.request, data)


def _next(turn: Turn) -> int:
    turn.memory["seq"] = turn.memory.get("seq", 0) + 1
    return int(turn.memory["seq"])


def _slot_noted(reply: Response, turn: Turn) -> Response:
    """PUTs and deletes noted in order (a deleted version's storage is freed at once)."""
    info, request = url_of(turn), turn.request
    body = request.json()
    if info and info["method"] == "PUT" and request.method == "PUT" and reply.ok:
        with turn.lock:
            turn.memory.setdefault("puts", {})[(info["artifact"], info["name"])] = \
                (_next(turn), request.body)
    elif request.endpoint == "versions/delete" and request.method == "POST" and reply.ok \
            and isinstance(body, dict):
        with turn.lock:
            turn.memory.setdefault("gone", {})[(body.get("artifact"), body.get("version"))] = \
                _next(turn)
    return reply


def _slot_reused(turn: Turn) -> Response | None:
    """A deleted version's URL serves the bytes of a later file of the same name."""
    info = url_of(turn)
    if not info or info["method"] != "GET" or turn.request.method not in ("GET", "HEAD"):
        return None
    with turn.lock:
        gone = turn.memory.get("gone", {}).get((info["artifact"], info["version"]))
        put = turn.memory.get("puts", {}).get((info["artifact"], info["name"]))
    if gone is None or put is None or put[0] <= gone:
        return None
    return served_range(turn.request, put[1])


_halfway_get, _noted_get = ends_early("GET", 0.5)
_an_hour_short, _claimed_later = ends_early("GET", 1.0, claim=_an_hour_later)
_halfway_put, _noted_put = ends_early("PUT", 0.5)
_halfway_resume, _noted_resume = ends_early("GET", 0.5, issuers=("artifacts/open",))

rows(
    # --- READ-4.a
    Row("read-sig-reused-across-versions-of-same-file", "READ-4.a",
        "a file's signature works on the same file name in another version",
        ALL, serve=resembling(_across_versions), watched=True),
    Row("read-sig-path-unchecked-for-head", "READ-4.a",
        "HEAD with a valid signature of another file is answered for this path",
        ALL, serve=resembling(_head_any_signature), watched=True),
    # --- READ-4.b
    Row("read-sig-last-char-ignored", "READ-4.b",
        "a signature that differs only in its last character is accepted",
        ALL, serve=resembling(lambda turn, path, query, info, kpath, kquery: kpath == path
                              and len(query) == len(kquery) and query[:-1] == kquery[:-1]),
        watched=True),
    # base64 is case-sensitive.
    Row("read-sig-compared-case-insensitively", "READ-4.b",
        "a signature with letters in another case is accepted",
        ALL, serve=resembling(lambda turn, path, query, info, kpath, kquery: kpath == path
                              and query.lower() == kquery.lower()), watched=True),
    # A prefix compare.
    Row("read-sig-truncated-accepted", "READ-4.b",
        "a signature missing its last 1-4 characters is accepted",
        ALL, serve=resembling(_truncated), watched=True),
    # --- READ-4.c
    Row("read-expired-url-accepted-for-head", "READ-4.c",
        "HEAD of an expired signed URL is answered instead of 403",
        ALL, answer=expired_admitted(lambda r: r.method == "HEAD"), watched=True),
    # A parallel download that started in time is let to finish.
    Row("read-expired-url-accepted-for-ranged-get", "READ-4.c",
        "a ranged GET of an expired signed URL is served instead of 403",
        ALL, answer=expired_admitted(lambda r: r.method == "GET" and bool(r.header("Range"))),
        watched=True),
    Row("read-expired-put-url-answers-200", "READ-4.c",
        "a PUT to a URL past its expires_at answers 200 instead of 403",
        ALL, answer=_expired_put_ok, watched=True),
    # --- READ-4.d
    Row("read-urls-unsigned-blob", "READ-4.d",
        "URLs are /blob/<base64 of artifact|version|name>: unsigned, never expire",
        ALL, serve=_blob_served, answer=_blob_urls_handed_out),
    Row("read-url-with-a-slash-added-served", "READ-4.d",
        "a signed URL with '/' appended to its path, or a '//' in it, is still served",
        ALL, serve=_slash_added, watched=True),
    # --- READ-4.e
    Row("read-urls-end-halfway-before-claimed-expiry", "READ-4.e",
        "a GET URL is refused (403) once half of its claimed lifetime has passed",
        ALL, serve=_halfway_get, answer=_noted_get, watched=True),
    Row("read-urls-claim-an-hour-past-real-expiry", "READ-4.e",
        "urls_expire_at claims one hour more than the URLs really live",
        ALL, serve=_an_hour_short, answer=_claimed_later, watched=True),
    Row("read-put-urls-end-halfway-before-expires-at", "READ-4.e",
        "a PUT URL is refused (403) once half of its claimed lifetime has passed",
        ALL, serve=_halfway_put, answer=_noted_put, watched=True),
    Row("open-resume-from-urls-end-halfway-before-claimed-expiry", "READ-4.e",
        "resume_from URLs are refused (403) once half of their claimed lifetime passed",
        ALL, serve=_halfway_resume, answer=_noted_resume, watched=True),
    # Ranged GETs, the parallel load, still work.
    Row("read-url-refused-after-one-whole-file-get", "READ-4.e",
        "a second unranged GET of a read URL gets 403 before the URL's expiry",
        ALL, serve=_used_twice, answer=noted("used", _first_use), watched=True),
    # --- VER-2.b, VER-7.c
    Row("ver-put-to-a-read-url-replaces-the-committed-file", "VER-2.b",
        "a PUT to a version's GET URL answers 200 and changes the file's bytes",
        ALL, serve=_put_to_read_url, watched=True),
    Row("ver-deleted-versions-urls-serve-a-later-file-of-the-same-name", "VER-7.c",
        "after a delete, a new same-named file's PUT is served by the deleted one's URLs",
        ALL, serve=_slot_reused, answer=_slot_noted, watched=True),
)
