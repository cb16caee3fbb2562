"""Mutants of VER-4: complete uploads, invisible staging, unknown uploads, size limits; one
watched row each (rows.py), whose bends read the book :func:`booked` keeps of the uploads.

A mutant that "accepts" a damaged upload does what such an implementation would store: it
writes the version again upstream with the files as they really arrived and commits that,
so the version that shows is consistent with its own bytes, just not with what was declared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.reads import api_call
from conformance.mutants.reads import committed
from conformance.mutants.reads import obj
from conformance.mutants.reads import resend
from conformance.mutants.reads import target_artifact
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows

Json = dict[str, Any]
Upload = dict[str, Any]
#: Every exchange: the book is kept from all of them.
ALL = On(kind="any", replies="any")
LIMIT_PROBE = 0


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the book: what each upload declared, which of its files were PUT, which committed ---


def _note_put(turn: Turn, request: Request, reply: Response) -> None:
    info = turn.seen.info(request) if turn.seen and request.kind == "data" else None
    if info and info["method"] == "PUT" and request.method == "PUT" and reply.ok:
        with turn.lock:
            turn.memory.setdefault("puts", {})[info["url"]] = request.body
            turn.memory.setdefault("last_put", {})[
                (info["artifact"], info["version"], info["name"])] = (info["upload"],
                                                                      request.body)


def booked(then: Bend) -> Bend:
    """Notes each upload's write (what it declared, its URLs), every PUT of its files (by
    URL, and the last one of each version's file name with its upload) and its commit in
    the row's memory, then bends the exchange with ``then``."""

    def bend(reply: Response, turn: Turn) -> Response:
        request = turn.request
        sent, body = obj(request), obj(reply)
        written = request.endpoint == "versions/write" and reply.ok and body.get("upload")
        if written:
            entry = {k: sent.get(k) for k in ("artifact", "version", "token")}
            entry["files"] = sent.get("files") or []
            entry["urls"] = {f.get("name"): f.get("url") for f in body.get("files") or []}
            with turn.lock:
                turn.memory.setdefault("uploads", {})[body["upload"]] = entry
        elif request.endpoint == "versions/commit" and reply.ok:
            with turn.lock:
                turn.memory.setdefault("committed", set()).add(sent.get("upload"))
        _note_put(turn, request, reply)
        return then(reply, turn)

    return bend


def upload(turn: Turn, upload_id: Any) -> Upload | None:
    with turn.lock:
        return turn.memory.get("uploads", {}).get(upload_id)


def put_body(turn: Turn, url: str | None) -> bytes | None:
    with turn.lock:
        return turn.memory.get("puts", {}).get(url)


def staged(turn: Turn, artifact: str) -> list[Upload]:
    """Uploads of ``artifact`` not committed, whose every file was PUT."""
    with turn.lock:
        done = set(turn.memory.get("committed", set()))
        uploads = dict(turn.memory.get("uploads", {}))
        put = set(turn.memory.get("puts", {}))
    return [dict(u, upload=k) for k, u in uploads.items()
            if u["artifact"] == artifact and k not in done and set(u["urls"].values()) <= put]


def _later_staged(turn: Turn, artifact: str, latest: str | None) -> list[str]:
    names = {u["version"] for u in staged(turn, artifact) if isinstance(u["version"], str)}
    return sorted(n for n in names if latest is None or n > latest)


# --- VER-4.a-b: commits of what arrived ---------------------------------------------------

Keep = Callable[[list[Json], list[bytes | None]], list[int] | None]


def recommitted(keep: Keep) -> Bend:
    """A commit refused as ``incomplete`` whose files ``keep`` picks (by index, from the
    declared files and the bodies that arrived) is written, PUT and committed again under
    the same token, with those files as they arrived."""

    def bend(reply: Response, turn: Turn) -> Response:
        sent = obj(turn.request)
        up = upload(turn, sent.get("upload")) if turn.request.endpoint == "versions/commit" \
            else None
        if not up or error_code(reply) != "incomplete":
            return reply
        declared = [f for f in up["files"] if isinstance(f, dict)]
        bodies = [put_body(turn, up["urls"].get(f.get("name"))) for f in declared]
        kept = keep(declared, bodies)
        if not kept:
            return reply
        files = {declared[i]["name"]: bodies[i] or b"" for i in kept}
        again = api_call(turn.upstream, turn.request, "POST", "versions/write", body={
            "artifact": up["artifact"], "token": sent.get("token"), "version": up["version"],
            "files": [{"name": n, "size": len(d), "sha256": _sha(d)} for n, d in files.items()]})
        if not again.ok:
            return reply
        for f in obj(again).get("files") or []:
            put = turn.upstream.send(resend(Request("PUT", "/", body=files[f["name"]]),
                                            f["url"]))
            if not put.ok:
                return reply
        done = api_call(turn.upstream, turn.request, "POST", "versions/commit", body={
            "artifact": up["artifact"], "token": sent.get("token"),
            "upload": obj(again).get("upload")})
        return done if done.ok else reply

    return booked(bend)


def _exact(spec: Json, body: bytes | None) -> bool:
    return body is not None and len(body) == spec.get("size") and _sha(body) == spec.get("sha256")


def _later_files_missing(declared: list[Json], bodies: list[bytes | None]) -> list[int] | None:
    if len(declared) < 2 or not _exact(declared[0], bodies[0]) or None not in bodies:
        return None
    if any(b is not None and not _exact(d, b) for d, b in zip(declared, bodies, strict=True)):
        return None
    return [i for i, b in enumerate(bodies) if b is not None]


def _one_byte_short(declared: list[Json], bodies: list[bytes | None]) -> list[int] | None:
    if None in bodies:
        return None
    pairs = list(zip(declared, bodies, strict=True))
    short = [len(b or b"") == d.get("size", 0) - 1 for d, b in pairs]
    if not any(short) or not all(s or _exact(d, b) for s, (d, b) in zip(short, pairs,
                                                                         strict=True)):
        return None
    return list(range(len(declared)))


def _first_sha_only(declared: list[Json], bodies: list[bytes | None]) -> list[int] | None:
    if None in bodies or not _exact(declared[0], bodies[0]):
        return None
    if any(len(b or b"") != d.get("size") for d, b in zip(declared, bodies, strict=True)):
        return None
    return list(range(len(declared)))


def _empty_files_put(turn: Turn) -> Response | None:
    """A declared empty file counts as uploaded: its PUT is made for it before the commit."""
    up = upload(turn, obj(turn.request).get("upload"))
    if turn.request.endpoint != "versions/commit" or not up or turn.seen is None:
        return None
    for f in up["files"]:
        url = up["urls"].get(f.get("name"))
        if f.get("size") == 0 and url and put_body(turn, url) is None:
            put = resend(Request("PUT", "/", body=b""), url)
            _note_put(turn, put, turn.seen.forward(put, turn.upstream))
    return None


# --- VER-4.c: staged uploads seen ---------------------------------------------------------


def _staged_has_checkpoints(turn: Turn) -> Response | None:
    body = obj(turn.request)
    artifact = body.get("artifact", "")
    if turn.request.endpoint == "artifacts/open" and body.get("resume") is None \
            and staged(turn, artifact) \
            and not committed(turn.upstream, turn.request, artifact):
        return Response.error(409, "has_checkpoints", f"{body['artifact']} has versions")
    return None


def _staged_latest(reply: Response, turn: Turn) -> Response:
    body = reply.json()
    if turn.request.endpoint != "artifacts/read" or not reply.ok or not isinstance(body, dict) \
            or not isinstance(body.get("versions"), int) or body["versions"] < 2:
        return reply
    later = _later_staged(turn, body.get("artifact", ""), body.get("latest"))
    if not later:
        return reply
    return reply.with_json({**body, "latest": later[-1],
                            "versions": body["versions"] + len(later)})


def _staged_listed(reply: Response, turn: Turn) -> Response:
    body = reply.json()
    listed = body.get("versions") if isinstance(body, dict) else None
    if turn.request.endpoint != "versions/list" or not reply.ok or not listed:
        return reply
    artifact = turn.request.arg("artifact") or ""
    by_version = {u["version"]: u for u in staged(turn, artifact)}
    for name in _later_staged(turn, artifact, listed[-1].get("version")):
        size = sum(int(f.get("size") or 0) for f in by_version[name]["files"])
        listed.append({**listed[-1], "version": name, "step": int(name[5:]), "size": size})
    return reply.with_json(body)


# --- VER-4.d: unknown uploads -------------------------------------------------------------


def _real_looking(reply: Response, turn: Turn) -> Response:
    wanted = str(obj(turn.request).get("upload"))
    with turn.lock:
        real = list(turn.memory.get("uploads", {}))
    if any(len(r) == len(wanted) and r[:3] == wanted[:3] for r in real):
        return Response.error(409, "incomplete", "no file of this upload has arrived")
    return reply


def _other_artifacts(reply: Response, turn: Turn) -> Response:
    up = upload(turn, obj(turn.request).get("upload"))
    if up and up["artifact"] != target_artifact(turn.request):
        return Response.error(400, "invalid_argument", "the upload is of another artifact")
    return reply


def _on_unknown_commit(bend: Bend) -> Bend:
    def on(reply: Response, turn: Turn) -> Response:
        if turn.request.endpoint != "versions/commit" or reply.status != 404:
            return reply
        return bend(reply, turn)

    return booked(on)


# --- VER-4.e: sizes -------------------------------------------------------------------------


def long_put_cut(tolerate: Callable[[bytes], bool]) -> Callable[[Turn], Response | None]:
    """A PUT longer than declared whose extra bytes ``tolerate`` is cut to the declared
    size."""

    def serve(turn: Turn) -> Response | None:
        info = turn.seen.info(turn.request) if turn.seen and turn.request.kind == "data" \
            else None
        body = turn.request.body
        if turn.seen is None or not info or info["method"] != "PUT" \
                or turn.request.method != "PUT" or not isinstance(info["size"], int) \
                or len(body) <= info["size"] or not tolerate(body[info["size"]:]):
            return None
        cut = replace(turn.request, body=body[:info["size"]])
        reply = turn.seen.forward(cut, turn.upstream)
        _note_put(turn, cut, reply)
        return reply

    return serve


def _later_files_unlimited(reply: Response, turn: Turn) -> Response:
    """Later files shrunk, largest first, until the upstream takes the write (the limit is
    not known from outside; a real implementation would not have looked at them)."""
    body = turn.request.json()
    if turn.request.endpoint != "versions/write" or error_code(reply) != "payload_too_large" \
            or not isinstance(body, dict) or len(body.get("files") or []) < 2 \
            or turn.seen is None:
        return reply
    files = [dict(f) for f in body["files"]]
    for f in sorted(files[1:], key=lambda f: -int(f.get("size") or 0)):
        f["size"], f["sha256"] = LIMIT_PROBE, _sha(b"")
        again = turn.seen.forward(turn.request.with_json({**body, "files": files}),
                                  turn.upstream)
        if again.ok:
            return again
        if error_code(again) != "payload_too_large":
            break
    return reply


def _identity(reply: Response, turn: Turn) -> Response:
    return reply


rows(
    # --- VER-4.a
    Row("ver-commit-counts-unput-empty-file-as-uploaded", "VER-4.a",
        "a commit succeeds although a declared zero-byte file was never PUT",
        ALL, serve=_empty_files_put, answer=booked(_identity), watched=True),
    # The missing ones are silently left out of the version.
    Row("ver-commit-drops-never-put-later-files", "VER-4.a",
        "a commit with later files never PUT commits without them",
        ALL, answer=recommitted(_later_files_missing), watched=True),
    # --- VER-4.b
    Row("ver-commit-accepts-file-one-byte-short", "VER-4.b",
        "a PUT one byte shorter than declared still commits (with what arrived)",
        ALL, answer=recommitted(_one_byte_short), watched=True),
    Row("ver-commit-checks-sha-of-first-file-only", "VER-4.b",
        "a later file with the declared size but other bytes still commits",
        ALL, answer=recommitted(_first_sha_only), watched=True),
    # --- VER-4.c
    Row("ver-staged-upload-counts-for-has-checkpoints", "VER-4.c",
        "a fully uploaded but uncommitted version makes a fresh open 409",
        ALL, serve=_staged_has_checkpoints, answer=booked(_identity), watched=True),
    Row("ver-staged-upload-is-latest-after-2-commits", "VER-4.c",
        "with 2+ commits, artifacts/read names a staged upload as latest",
        ALL, answer=booked(_staged_latest), watched=True),
    Row("ver-staged-upload-listed-when-fully-put", "VER-4.c",
        "versions/list shows an uncommitted upload once all its files were PUT",
        ALL, answer=booked(_staged_listed), watched=True),
    # --- VER-4.d
    Row("ver-unknown-upload-shaped-like-real-gets-incomplete", "VER-4.d",
        "committing an unknown but real-looking upload id answers 409 incomplete",
        ALL, answer=_on_unknown_commit(_real_looking), watched=True),
    Row("ver-upload-of-other-artifact-gives-400", "VER-4.d",
        "committing another artifact's upload answers 400 invalid_argument",
        ALL, answer=_on_unknown_commit(_other_artifacts), watched=True),
    # --- VER-4.e
    Row("ver-put-one-byte-longer-accepted", "VER-4.e",
        "a PUT body one byte longer than declared is accepted",
        ALL, serve=long_put_cut(lambda extra: len(extra) == 1), watched=True),
    Row("ver-put-longer-accepted-when-extra-is-zeros", "VER-4.e",
        "a PUT longer than declared is accepted if the extra bytes are NUL padding",
        ALL, serve=long_put_cut(lambda extra: not extra.strip(b"\0")), watched=True),
    Row("ver-size-limit-checked-on-first-file-only", "VER-4.e",
        "a write declaring an over-limit size for a later file is accepted",
        ALL, answer=_later_files_unlimited, watched=True),
)
