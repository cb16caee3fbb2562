"""Mutants of uploads (VER-4: a refused commit that claims its version or drops the upload,
a staged upload counted as a version, another artifact's upload committed there, sizes
and bodies let past the declaration), joined writes (VER-5: another version let in, a
size or a reply or a list that knows the first write only, a refused join that empties a
file) and streamed bodies (VER-6: a shorter PUT keeping a tail, a list entry completed, a
reply without sizes). One row each (rows.py)."""

from __future__ import annotations

import hashlib
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.base import ok_or
from conformance.mutants.m_retention import claim
from conformance.mutants.m_retention import claimed_step_refused
from conformance.mutants.m_retention import step_of
from conformance.mutants.m_versions import listed
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.streamed_files import received
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import with_key

Json = dict[str, Any]
WRITE, COMMIT = ("versions/write",), ("versions/commit",)
DATA_PUT = On(kind="any", when=lambda r: r.kind == "data" and r.method == "PUT")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _upload(turn: Turn) -> UploadInfo | None:
    """The upload the request's body names, if the proxy saw it written."""
    with turn.lock:
        return turn.t.uploads.get(str(body_of(turn.request).get("upload")))


def _declared(turn: Turn) -> tuple[UploadInfo, str, Json | None] | None:
    """The upload, file name and declaration of a data PUT to a URL the proxy handed out."""
    with turn.lock:
        up = turn.t.uploads.get(turn.t.paths.get(turn.request.path) or "")
    if up is None:
        return None
    name = up.paths.get(turn.request.path)
    spec = next((f for f in up.write.get("files") or [] if isinstance(f, dict)
                 and f.get("name") == name), None)
    return up, str(name), spec


def _put(turn: Turn, body: bytes) -> Request:
    request = turn.request
    return Request("PUT", request.path, request.query, request.headers, body)


def _if_refused(bend: Bend) -> Bend:
    """``bend`` for a reply that is no success; a success left as it was."""
    return lambda reply, turn: reply if reply.ok else bend(reply, turn)


# --- VER-4 --------------------------------------------------------------------------------


def _claimed_when_incomplete(reply: Response, turn: Turn) -> Response:
    if turn.request.endpoint == "versions/commit" and error_code(reply) == "incomplete":
        up = _upload(turn)
        if up is not None:
            claim(turn, up.artifact, up.write.get("version"))
    return reply


def _dropped_commit(turn: Turn) -> Response | None:
    if turn.request.endpoint != "versions/commit":
        return None
    with turn.lock:
        dropped = body_of(turn.request).get("upload") in turn.memory.get("dropped", set())
    return Response.error(404, "not_found", "no such upload") if dropped else None


def _incomplete_drops(reply: Response, turn: Turn) -> Response:
    sent = body_of(turn.request)
    if turn.request.endpoint == "versions/commit" and error_code(reply) == "incomplete" \
            and not sent.get("files"):
        with turn.lock:
            turn.memory.setdefault("dropped", set()).add(sent.get("upload"))
    return reply


def _staged_blocks_fork(turn: Turn) -> Response | None:
    resume = body_of(turn.request).get("resume")
    if not isinstance(resume, str) or not resume.startswith("o41://"):
        return None
    art = body_of(turn.request).get("artifact")
    with turn.lock:
        staged = [u for u in turn.t.uploads.values() if u.artifact == art and u.complete
                  and u.upload not in turn.t.closed]
    if staged and not listed(turn, str(art)):
        return Response.error(409, "not_empty", "the artifact has versions")
    return None


def _below_an_uncommitted_step(turn: Turn) -> Response | None:
    sent = body_of(turn.request)
    step = step_of(sent.get("version"))
    if turn.request.method != "POST" or sent.get("upload") is not None or step is None:
        return None
    with turn.lock:
        staged = [step_of(u.write.get("version")) for u in turn.t.uploads.values()
                  if u.artifact == sent.get("artifact") and u.upload not in turn.t.closed]
    if any(s is not None and s > step for s in staged):
        return Response.error(409, "not_after_latest", "the step is not after the latest")
    return None


def _committed_where_it_belongs(reply: Response, turn: Turn) -> Response:
    up = _upload(turn)
    if up is None or up.artifact == body_of(turn.request).get("artifact"):
        return reply
    again = turn.request.with_json({"artifact": up.artifact, "token": up.token,
                                    "upload": up.upload})
    landed = turn.upstream.send(with_key(again, up.key) if up.key else again)
    return landed if landed.ok else reply


def _empty_file_body_dropped(turn: Turn) -> Request | None:
    found = _declared(turn)
    spec = found[2] if found else None
    if isinstance(spec, dict) and spec.get("size") == 0 and turn.request.body:
        return _put(turn, b"")
    return None


def _chunked_cut(turn: Turn) -> Request | None:
    if "chunked" not in (turn.request.header("Transfer-Encoding") or "").lower():
        return None
    found = _declared(turn)
    size = found[2].get("size") if found and isinstance(found[2], dict) else None
    if not isinstance(size, int) or len(turn.request.body) <= size:
        return None
    return Request("PUT", turn.request.path, turn.request.query, (), turn.request.body[:size])


def _joined_size_unchecked(turn: Turn) -> Request | None:
    sent = body_of(turn.request)
    files = sent.get("files")
    if sent.get("upload") is None or not isinstance(files, list):
        return None
    with turn.lock:
        known = str(sent.get("upload")) in turn.t.uploads
    big = [f for f in files if isinstance(f, dict) and isinstance(f.get("size"), int)
           and f["size"] > 2**40]
    if not known or not big:
        return None
    return turn.request.with_json({**sent, "files": [{**f, "size": 1} if f in big else f
                                                     for f in files]})


# --- VER-5 --------------------------------------------------------------------------------


def _upload_version_taken(turn: Turn) -> Request | None:
    sent = body_of(turn.request)
    if turn.request.method != "POST" or step_of(sent.get("version")) is None:
        return None
    with turn.lock:
        up = turn.t.uploads.get(str(sent.get("upload")))
    if up is None or up.write.get("version") == sent.get("version"):
        return None
    return turn.request.with_json({**sent, "version": up.write.get("version")})


def first_write_noted(turn: Turn, reply: Response) -> None:
    """The file names of a write that starts an upload, kept per upload (``first``)."""
    sent = body_of(turn.request)
    answer = reply.json()
    if turn.request.endpoint == "versions/write" and reply.ok and sent.get("upload") is None \
            and isinstance(answer, dict):
        with turn.lock:
            turn.memory.setdefault("first", {})[str(answer.get("upload"))] = {
                f.get("name") for f in sent.get("files") or [] if isinstance(f, dict)}


def _first_names(turn: Turn, upload: str) -> set[Any]:
    with turn.lock:
        return set(turn.memory.get("first", {}).get(upload, set()))


def _sized_by_first_write(reply: Response, turn: Turn) -> Response:
    """Writes and commits are noted: the size of a Version made by several writes is
    that of its first write's files, wherever a Version is answered."""
    request, sent, data = turn.request, body_of(turn.request), reply.json()
    if not reply.ok or not isinstance(data, dict):
        return reply
    with turn.lock:
        memory = turn.memory
        if request.endpoint == "versions/write":
            if sent.get("upload") is None:
                memory.setdefault("first", {})[str(data.get("upload"))] = [
                    f for f in sent.get("files") or [] if isinstance(f, dict)]
            else:
                memory.setdefault("joined", set()).add(str(sent.get("upload")))
        if request.endpoint == "versions/commit" and str(sent.get("upload")) in \
                memory.get("joined", set()):
            names = {f.get("name") for f in memory.get("first", {}).get(str(sent.get("upload")),
                                                                        [])}
            memory.setdefault("size", {})[(data.get("artifact"), data.get("version"))] = sum(
                int(f.get("size") or 0) for f in data.get("files") or []
                if isinstance(f, dict) and f.get("name") in names)
        sizes = dict(memory.get("size", {}))

    def fix(version: Any) -> Any:
        if not isinstance(version, dict):
            return version
        size = sizes.get((version.get("artifact"), version.get("version")))
        return version if size is None else {**version, "size": size}

    if request.endpoint in ("versions/read", "versions/commit"):
        return reply.with_json(fix(data))
    if request.endpoint == "versions/list":
        return reply.with_json({**data, "versions": [fix(v) for v in data.get("versions") or []]})
    if request.endpoint == "artifacts/open" and data.get("resume_from"):
        return reply.with_json({**data, "resume_from": fix(data["resume_from"])})
    return reply


def _reply_of_first_write(reply: Response, turn: Turn) -> Response:
    first_write_noted(turn, reply)
    data = reply.json()
    if turn.request.endpoint != "versions/commit" or not reply.ok or not isinstance(data, dict):
        return reply
    first = _first_names(turn, str(body_of(turn.request).get("upload")))
    files = [f for f in data.get("files") or [] if isinstance(f, dict)]
    if not first or all(f.get("name") in first for f in files):
        return reply
    return reply.with_json({**data, "files": [f for f in files if f.get("name") in first]})


def _first_writes_streams_filled_in(reply: Response, turn: Turn) -> Response:
    first_write_noted(turn, reply)
    if turn.request.endpoint != "versions/commit" or error_code(reply) != "incomplete":
        return reply
    up = _upload(turn)
    if up is None:
        return reply
    sent = body_of(turn.request)
    first = _first_names(turn, up.upload)
    listed_files = [f for f in sent.get("files") or [] if isinstance(f, dict)]
    names = {f.get("name") for f in listed_files}
    extra = [f for f in received(up, turn.lock) if f["name"] not in names | first]
    if not extra:
        return reply
    return ok_or(turn.upstream, turn.request.with_json({**sent, "files": listed_files + extra}),
                 reply)


def _put_noted(turn: Turn) -> None:
    if turn.request.kind == "data" and turn.request.method == "PUT":
        with turn.lock:
            turn.memory.setdefault("put", {})[turn.request.path] = turn.request


def _repeated_file_emptied(reply: Response, turn: Turn) -> Response:
    sent = body_of(turn.request)
    if turn.request.endpoint != "versions/write" or sent.get("upload") is None \
            or error_code(reply) != "invalid_argument":
        return reply
    up = _upload(turn)
    with turn.lock:
        puts = dict(turn.memory.get("put", {}))
    if up is None:
        return reply
    again = {f.get("name") for f in sent.get("files") or [] if isinstance(f, dict)}
    for path, name in list(up.paths.items()):
        if name in again and path in puts:
            old = puts[path]
            turn.upstream.send(Request("PUT", old.path, old.query, (), b""))
    return reply


# --- VER-6 --------------------------------------------------------------------------------


def _tail_kept(turn: Turn) -> Response | None:
    """A PUT to a streamed file's URL stored over the earlier body without cutting it."""
    found = _declared(turn)
    if found is None or not isinstance(found[2], dict) or "size" in found[2]:
        return None
    body = turn.request.body
    with turn.lock:
        stored = turn.memory.setdefault("stored", {})
        old = stored.get(turn.request.path, b"")
        kept = body + old[len(body):]
        stored[turn.request.path] = kept
    if kept == body:
        return None
    got = turn.upstream.send(_put(turn, kept))
    if not got.ok:
        return got
    answer = {"name": found[1], "size": len(body), "sha256": _sha(body)}
    return Response(200, (("Content-Type", "application/json"),)).with_json(answer)


def _hash_filled_in(reply: Response, turn: Turn) -> Response:
    up = _upload(turn)
    sent = body_of(turn.request)
    entries: list[Any] = list(sent.get("files") or []) if isinstance(sent.get("files"),
                                                                      list) else []
    if up is None or not any(isinstance(f, dict) and "sha256" not in f for f in entries):
        return reply
    truth = {f["name"]: f for f in received(up, turn.lock)}
    fixed = [truth.get(f.get("name"), f) if isinstance(f, dict) and "sha256" not in f
             and truth.get(f.get("name"), {}).get("size") == f.get("size") else f
             for f in entries]
    return ok_or(turn.upstream, turn.request.with_json({**sent, "files": fixed}), reply)


def _streamed_unsized(reply: Response, turn: Turn) -> Response:
    up = _upload(turn)
    if up is None:
        return reply
    data = reply.json()
    free = {f.get("name") for f in up.write.get("files") or []
            if isinstance(f, dict) and "size" not in f}
    files = [{**f, "size": None, "sha256": None}
             if isinstance(f, dict) and f.get("name") in free else f
             for f in data.get("files") or []]
    return reply.with_json({**data, "files": files}) if free else reply


rows(
    Row("ver-commit-refused-as-incomplete-still-claims-its-version", "VER-4.a",
        "after a commit of step N is refused incomplete, a new write of step N gets 409",
        On((*WRITE, *COMMIT), replies="any"), serve=claimed_step_refused,
        answer=_claimed_when_incomplete, tracked=True),
    Row("ver-upload-refused-as-incomplete-is-dropped", "VER-4.a",
        "after a commit refused for a missing declared file, the upload's commit is 404",
        On(COMMIT, replies="any"), serve=_dropped_commit, answer=_incomplete_drops,
        tracked=True),
    Row("ver-staged-upload-makes-fork-target-not-empty", "VER-4.c",
        "a fork into an empty artifact with a fully PUT uncommitted upload is 409",
        On(("artifacts/open",)), serve=_staged_blocks_fork, tracked=True),
    Row("ver-step-compared-with-an-uncommitted-upload", "VER-4.c",
        "a write below an uncommitted upload's step gets 409 not_after_latest",
        On(WRITE), serve=_below_an_uncommitted_step, tracked=True),
    Row("ver-upload-of-other-artifact-committed-into-its-own", "VER-4.d",
        "a commit naming another artifact's upload commits that upload there (200)",
        On(COMMIT, replies="any"), answer=_if_refused(_committed_where_it_belongs),
        tracked=True),
    Row("ver-put-body-to-empty-declared-file-accepted", "VER-4.e",
        "a PUT with a body to a file declared with size 0 is accepted",
        DATA_PUT, serve=_empty_file_body_dropped, tracked=True),
    Row("ver-chunked-put-longer-than-declared-cut-and-taken", "VER-4.e",
        "a chunked PUT longer than the file's declared size stores its prefix, 200",
        DATA_PUT, serve=_chunked_cut, tracked=True),
    Row("ver-declared-size-over-the-limit-in-a-joining-write-accepted", "VER-4.e",
        "a write naming an upload accepts a declared size over the limit",
        On(WRITE), serve=_joined_size_unchecked, tracked=True),
    Row("ver-write-of-another-version-into-an-upload-accepted", "VER-5.c",
        "a write of step N naming an upload of step M adds its files to step M",
        On(WRITE), serve=_upload_version_taken, tracked=True),
    Row("ver-size-of-a-joined-version-counts-the-first-write-only", "VER-5.a",
        "a Version made by several writes has the size of its first write's files",
        On(replies="any"), answer=_sized_by_first_write, tracked=True),
    Row("ver-commit-reply-lists-the-first-writes-files-only", "VER-5.a",
        "the commit of a joined upload answers files of the first write only",
        On((*WRITE, *COMMIT), replies="any"), answer=_reply_of_first_write, tracked=True),
    Row("ver-commit-list-checks-the-first-writes-streamed-files-only", "VER-5.e",
        "a joining write's streamed file missing from the commit list still commits",
        On((*WRITE, *COMMIT), replies="any"), answer=_first_writes_streams_filled_in,
        tracked=True),
    Row("ver-write-refused-for-a-repeated-name-empties-that-file", "VER-5.b",
        "a joining write refused for a repeated name drops the bytes PUT to that file",
        On(kind="any", replies="any"), serve=_put_noted,
        answer=_repeated_file_emptied, tracked=True),
    Row("ver-shorter-later-put-keeps-the-earlier-bodys-tail", "VER-6.b",
        "a shorter second PUT of a streamed file leaves the first body's tail stored",
        DATA_PUT, serve=_tail_kept, tracked=True),
    Row("ver-commit-list-entry-without-sha256-filled-in", "VER-6.c",
        "a commit listing a streamed file without sha256 takes the received one",
        On(COMMIT, replies="any"), answer=_if_refused(_hash_filled_in), tracked=True),
    Row("ver-commit-reply-gives-streamed-files-no-size-or-sha256", "VER-6.a",
        "the commit's Version lists streamed files with size and sha256 null",
        On(COMMIT), answer=_streamed_unsized, tracked=True),
)
