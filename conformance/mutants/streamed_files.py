"""What the mutants of streamed files (VER-6) share: which data PUT is of a streamed file
(declared by name alone), what it received, what its PUT answers, a request's commit list,
and a bend that notes a commit and then shows its Versions changed."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Turn
from conformance.mutants.tracking import Facts
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import body_of

Json = dict[str, Any]
Listed = list[dict[str, Any]]
#: Every exchange (a tracked row sees them all and picks its own).
ALL = On(kind="any", replies="any")
DATA = On(kind="data", replies="any")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def answered(name: str, data: bytes) -> Response:
    """A streamed PUT's answer: what it received."""
    got = {"name": name, "size": len(data), "sha256": sha(data)}
    return Response(200, (("Content-Type", "application/json"),)).with_json(got)


def _streamed(facts: Facts, lock: threading.Lock,
              request: Request) -> tuple[UploadInfo, str] | None:
    if request.kind != "data" or request.method != "PUT":
        return None
    with lock:
        up_id = facts.paths.get(request.path)
        up = facts.uploads.get(up_id) if up_id else None
    if up is None:
        return None
    name = up.paths.get(request.path)
    spec = next((f for f in up.write.get("files") or [] if f.get("name") == name), None)
    if not isinstance(spec, dict) or "size" in spec:
        return None
    return up, str(name)


def received(up: UploadInfo, lock: threading.Lock) -> list[dict[str, Any]]:
    """The commit list of what the streamed files of ``up`` last received."""
    with lock:
        puts = dict(up.puts)
    return [{"name": n, "size": len(d), "sha256": sha(d)} for n, d in puts.items()
            if not any(f.get("name") == n and "size" in f for f in up.write.get("files") or [])]


def streamed_put(turn: Turn) -> tuple[UploadInfo, str] | None:
    """The upload and file name of a (tracked) PUT to a streamed file's URL, else None."""
    return _streamed(turn.t, turn.lock, turn.request)


def upload_of(turn: Turn) -> UploadInfo | None:
    """The upload a (tracked) request names in its body, if the proxy saw it written."""
    with turn.lock:
        return turn.t.uploads.get(str(body_of(turn.request).get("upload")))


def listed_files(request: Request) -> Listed:
    return [f for f in body_of(request).get("files") or [] if isinstance(f, dict)]


def chunked(request: Request) -> bool:
    return "chunked" in (request.header("Transfer-Encoding") or "").lower()


def versions_shown(fix: Callable[[Json, Turn], Json]) -> Callable[[Json, Turn], Json | None]:
    """Every Version a reply shows (a read's, a commit's, a list's entries, an open's
    ``resume_from``) given to ``fix``."""

    def change(data: Json, turn: Turn) -> Json | None:
        endpoint = turn.request.endpoint
        if endpoint in ("versions/read", "versions/commit"):
            return fix(data, turn)
        if endpoint == "versions/list":
            return {**data, "versions": [fix(v, turn) if isinstance(v, dict) else v
                                         for v in data.get("versions") or []]}
        if endpoint == "artifacts/open" and isinstance(data.get("resume_from"), dict):
            return {**data, "resume_from": fix(data["resume_from"], turn)}
        return None

    return change


def noted_then_shown(note: Callable[[Json, Turn], None],
                     fix: Callable[[Json, Turn], Json]) -> Bend:
    """An ok API reply: a commit's noted (``note``), then its Versions ``fix``ed."""
    show = versions_shown(fix)

    def bend(reply: Response, turn: Turn) -> Response:
        data = reply.json() if reply.ok else None
        if not isinstance(data, dict) or turn.request.kind != "api":
            return reply
        if turn.request.endpoint == "versions/commit":
            note(data, turn)
        new = show(data, turn)
        return reply if new is None else reply.with_json(new)

    return bend


EMPTY_SHA256 = sha(b"")
