"""Mutants of streamed files (VER-6), and of the file a PUT sends past its declared size
(VER-4.e): a PUT that does not say what it received, a chunked PUT refused, a later PUT that
replaces nothing or keeps the first size, a commit that fills in or forgives its list, an
upload spoiled by a refused commit, a limit that is off or replaces the file, and errors
answered in the wrong order (VER-6.f); one tracked row each (rows.py).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from collections.abc import Hashable
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.base import ok_or
from conformance.mutants.m_retention import step_of
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import changed
from conformance.mutants.rows import error
from conformance.mutants.rows import noted
from conformance.mutants.rows import recalled
from conformance.mutants.rows import rows
from conformance.mutants.tracking import Facts
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of

Json = dict[str, Any]
Listed = list[dict[str, Any]]
COMMIT, WRITE = ("versions/commit",), ("versions/write",)
#: Every exchange (a tracked row sees them all and picks its own).
ALL = On(kind="any", replies="any")
DATA = On(kind="data", replies="any")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _answer(name: str, data: bytes) -> Response:
    """A streamed PUT's answer: what it received."""
    got = {"name": name, "size": len(data), "sha256": _sha(data)}
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
    return [{"name": n, "size": len(d), "sha256": _sha(d)} for n, d in puts.items()
            if not any(f.get("name") == n and "size" in f for f in up.write.get("files") or [])]


def streamed_put(turn: Turn) -> tuple[UploadInfo, str] | None:
    """The upload and file name of a (tracked) PUT to a streamed file's URL, else None."""
    return _streamed(turn.t, turn.lock, turn.request)


def upload_of(turn: Turn) -> UploadInfo | None:
    """The upload a (tracked) request names in its body, if the proxy saw it written."""
    with turn.lock:
        return turn.t.uploads.get(str(body_of(turn.request).get("upload")))


def _listed(request: Request) -> Listed:
    return [f for f in body_of(request).get("files") or [] if isinstance(f, dict)]


def _chunked(request: Request) -> bool:
    return "chunked" in (request.header("Transfer-Encoding") or "").lower()


# --- what a streamed PUT answers (VER-6.a, e) -----------------------------------------------


def put_answer(change: Callable[[Json, Turn], Json | None]) -> Bend:
    """A streamed PUT's answer (a JSON object) changed by ``change``."""

    def bend(reply: Response, turn: Turn) -> Response:
        if streamed_put(turn) is None:
            return reply
        new = change(reply.json(), turn)
        return reply if new is None else reply.with_json(new)

    return bend


def _past_limit(then: Callable[[Response, Turn, tuple[UploadInfo, str]], Response]) -> Bend:
    """A streamed PUT refused 413 bent by ``then`` (the reply, the turn, its file)."""

    def bend(reply: Response, turn: Turn) -> Response:
        found = streamed_put(turn)
        return reply if reply.status != 413 or found is None else then(reply, turn, found)

    return bend


def _emptied(reply: Response, turn: Turn, found: tuple[UploadInfo, str]) -> Response:
    request = turn.request
    turn.upstream.send(Request("PUT", request.path, request.query, (), b""))
    return reply


def _limit_learned(reply: Response, turn: Turn) -> Response:
    """The limit learned from the writes seen: the largest declared size accepted below
    the smallest one refused with 413."""
    sizes = [f.get("size") for f in _listed(turn.request) if isinstance(f.get("size"), int)]
    key = "refused" if reply.status == 413 else "taken" if reply.ok else None
    if turn.request.endpoint == "versions/write" and len(sizes) == 1 and key:
        with turn.lock:
            old = turn.memory.get(key)
            pick = min if key == "refused" else max
            turn.memory[key] = sizes[0] if old is None else pick(old, sizes[0])
    return reply


def _limit_reached(turn: Turn) -> Response | None:
    with turn.lock:
        refused, taken = turn.memory.get("refused"), turn.memory.get("taken")
    limit = taken if refused is not None and taken is not None and taken + 1 == refused \
        else None
    if limit is not None and len(turn.request.body) == limit and streamed_put(turn) is not None:
        return Response.error(413, "payload_too_large", "the body reaches the limit")
    return None


def _empty_put_not_stored(turn: Turn) -> Response | None:
    """A body of no bytes taken for no body."""
    found = streamed_put(turn)
    if found is None or turn.request.body or turn.request.header("Content-Length") != "0":
        return None
    return _answer(found[1], b"")


# --- what a later PUT changes (VER-6.b) ---------------------------------------------------------


def _later_put_ignored(turn: Turn) -> Response | None:
    found = streamed_put(turn)
    if found is None:
        return None
    up, name = found
    with turn.lock:
        earlier = name in up.puts
    return _answer(name, turn.request.body) if earlier else None


def _puts_kept(turn: Turn) -> None:
    """Every streamed PUT's request kept, per upload and file (the row's memory)."""
    found = streamed_put(turn)
    if found is not None:
        with turn.lock:
            turn.memory.setdefault("puts", {}).setdefault(
                (found[0].upload, found[1]), []).append(turn.request)


def history(turn: Turn, upload: str, name: str) -> list[Request]:
    with turn.lock:
        return list(turn.memory.get("puts", {}).get((upload, name), []))


def _kept(turn: Turn) -> Response | None:
    _puts_kept(turn)
    return None


def _earlier_put_committed(reply: Response, turn: Turn) -> Response:
    """The commit takes the kept body whose size and sha256 the list names."""
    up = upload_of(turn)
    if up is None:
        return reply
    redo: list[tuple[Request, Request]] = []
    for f in _listed(turn.request):
        puts = history(turn, up.upload, str(f.get("name")))
        old = next((p for p in puts[:-1] if len(p.body) == f.get("size")
                    and _sha(p.body) == f.get("sha256")), None)
        if old is not None and (len(puts[-1].body), _sha(puts[-1].body)) != \
                (f.get("size"), f.get("sha256")):
            redo.append((old, puts[-1]))
    if not redo:
        return reply
    for old, _ in redo:
        turn.upstream.send(Request("PUT", old.path, old.query, (), old.body))
    again = turn.upstream.send(turn.request)
    if again.ok:
        return again
    for _, last in redo:  # the try failed: the file gets its last bytes back
        turn.upstream.send(Request("PUT", last.path, last.query, (), last.body))
    return reply


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


def _first_sizes(data: Json, turn: Turn) -> None:
    up = upload_of(turn)
    found = {}
    for name in {f.get("name") for f in data.get("files") or [] if isinstance(f, dict)}:
        puts = history(turn, up.upload, str(name)) if up else []
        if len(puts) > 1 and len(puts[0].body) != len(puts[-1].body):
            found[(data.get("artifact"), data.get("version"), name)] = len(puts[0].body)
    with turn.lock:
        turn.memory.setdefault("first", {}).update(found)


def _with_first_sizes(version: Json, turn: Turn) -> Json:
    with turn.lock:
        sizes = dict(turn.memory.get("first", {}))
    files = []
    for f in version.get("files") or []:
        key = (version.get("artifact"), version.get("version"),
               f.get("name") if isinstance(f, dict) else None)
        files.append({**f, "size": sizes[key]} if key in sizes else f)
    if files == (version.get("files") or []):
        return version
    return {**version, "files": files,
            "size": sum(int(f.get("size") or 0) for f in files if isinstance(f, dict))}


def _declared_total(data: Json, turn: Turn) -> None:
    up = upload_of(turn)
    if up is not None and any(isinstance(f, dict) and "size" not in f
                              for f in up.write.get("files") or []):
        total = sum(int(f["size"]) for f in up.write.get("files") or []
                    if isinstance(f, dict) and isinstance(f.get("size"), int))
        with turn.lock:
            turn.memory.setdefault("sizes", {})[(data.get("artifact"),
                                                 data.get("version"))] = total


def _with_declared_size(version: Json, turn: Turn) -> Json:
    with turn.lock:
        size = turn.memory.get("sizes", {}).get((version.get("artifact"),
                                                 version.get("version")))
    return version if size is None else {**version, "size": size}


def _late_put_noted(turn: Turn) -> Response | None:
    """A PUT to a committed upload's file noted as that version's bytes from now on; a
    GET of a version's URL served those bytes."""
    request = turn.request
    if request.kind == "data" and request.method == "GET":
        with turn.lock:
            key = turn.memory.get("reads", {}).get(request.path)
            late = turn.memory.get("late", {}).get(key) if key else None
        if late is not None:
            return Response(200, (("Content-Type", "application/octet-stream"),), late)
    if request.kind == "data" and request.method == "PUT":
        with turn.lock:
            up_id = turn.t.paths.get(request.path)
            up = turn.t.uploads.get(up_id) if up_id else None
            made = turn.memory.get("made", {}).get(up_id)
            if up is not None and made is not None:
                turn.memory.setdefault("late", {})[
                    (up.artifact, made, up.paths.get(request.path))] = request.body
    return None


def _versions_made_and_read(reply: Response, turn: Turn) -> Response:
    data = reply.json() if reply.ok else None
    if not isinstance(data, dict):
        return reply
    if turn.request.endpoint == "versions/commit":
        with turn.lock:
            turn.memory.setdefault("made", {})[body_of(turn.request).get("upload")] = \
                data.get("version")
    elif turn.request.endpoint == "versions/read":
        with turn.lock:
            reads = turn.memory.setdefault("reads", {})
            for f in data.get("files") or []:
                if isinstance(f, dict) and isinstance(f.get("url"), str):
                    reads[urlsplit(f["url"]).path] = (data.get("artifact"),
                                                      data.get("version"), f.get("name"))
    return reply


# --- the commit's list (VER-6.c, d) ---------------------------------------------------------


def commit_list_retried(fix: Callable[[Turn, UploadInfo, Listed], Listed | None]) -> Bend:
    """A refused commit of an upload the proxy saw written is sent again with the list
    ``fix`` makes of its list (None: the refusal stands); that reply if it succeeds."""

    def bend(reply: Response, turn: Turn) -> Response:
        up = upload_of(turn)
        fixed = None if up is None else fix(turn, up, _listed(turn.request))
        if fixed is None:
            return reply
        return ok_or(turn.upstream,
                     turn.request.with_json({**body_of(turn.request), "files": fixed}), reply)

    return bend


def _filled_in(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    names = {f.get("name") for f in listed}
    extra = [f for f in received(up, turn.lock) if f["name"] not in names]
    return listed + extra if extra else None


def _received_values(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    truth = {f["name"]: f for f in received(up, turn.lock)}
    fixed = [truth.get(f.get("name"), f) for f in listed]
    return fixed if listed and fixed != listed else None


def _without_other_files(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    ours = {f.get("name") for f in up.write.get("files") or []}
    kept = [f for f in listed if f.get("name") in ours]
    return kept if len(kept) != len(listed) else None


def _declared(up: UploadInfo) -> dict[str, Json]:
    """The upload's files declared with a size, by name."""
    return {f["name"]: f for f in up.write.get("files") or []
            if isinstance(f, dict) and "size" in f}


def _declared_values(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    declared = _declared(up)
    fixed = [{"name": f.get("name"), "size": declared[f["name"]]["size"],
              "sha256": declared[f["name"]].get("sha256")}
             if f.get("name") in declared else f for f in listed]
    return None if fixed == listed else fixed


def _names_of_the_upload(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    ours = {str(f.get("name")).casefold(): f.get("name") for f in up.write.get("files") or []
            if isinstance(f, dict)}
    fixed = [{**f, "name": ours.get(str(f.get("name")).casefold(), f.get("name"))}
             for f in listed]
    names = [f["name"] for f in fixed]
    if fixed == listed or len(set(names)) < len(names) or not set(names) <= set(ours.values()):
        return None
    return fixed


def _named_twice(request: Request) -> bool:
    names = [f.get("name") for f in _listed(request)]
    return len(set(names)) < len(names)


def _lists_a_declared_file(turn: Turn) -> Response | None:
    """The commit list taken as the list of streamed files."""
    up = upload_of(turn)
    if up is not None and any(f.get("name") in _declared(up) for f in _listed(turn.request)):
        return Response.error(400, "invalid_argument", "a listed file is not streamed")
    return None


def _spoiled(turn: Turn) -> Response | None:
    if recalled("spoiled", body_of(turn.request).get("upload"), turn):
        return Response.error(409, "incomplete", "the upload was refused before")
    return None


def _spoils(reply: Response, turn: Turn) -> set[Hashable]:
    refused = error_code(reply) == "incomplete" and _listed(turn.request)
    return {body_of(turn.request).get("upload")} if refused else set()


def streamed_names(turn: Turn, artifact: object) -> set[str]:
    """Names declared by name alone in any upload of ``artifact``."""
    with turn.lock:
        return {str(f.get("name")) for up in turn.t.uploads.values() if up.artifact == artifact
                for f in up.write.get("files") or [] if isinstance(f, dict) and "size" not in f}


EMPTY_SHA256 = _sha(b"")


def _resumed_as_declared(data: Json, turn: Turn) -> Json | None:
    """A resume_from whose streamed files have the size and sha256 they were declared
    with (none: 0 and the sha256 of nothing)."""
    resume = data.get("resume_from")
    if not isinstance(resume, dict):
        return None
    names = streamed_names(turn, resume.get("artifact"))
    files = resume.get("files") or []
    if not any(f.get("name") in names for f in files if isinstance(f, dict)):
        return None
    return {**data, "resume_from": {**resume, "files": [
        {**f, "size": 0, "sha256": EMPTY_SHA256} if f.get("name") in names else f
        for f in files]}}


# --- VER-4.e: a PUT longer than declared --------------------------------------------------------


def _declared_size(turn: Turn) -> int | None:
    """The size declared for the file a (tracked) PUT's URL is of (None: none known)."""
    with turn.lock:
        up = turn.t.uploads.get(turn.t.paths.get(turn.request.path) or "")
    if up is None:
        return None
    sizes = {f.get("name"): f.get("size") for f in up.write.get("files") or []
             if isinstance(f, dict)}
    size = sizes.get(up.paths.get(turn.request.path))
    return size if isinstance(size, int) else None


def _prefix_kept(turn: Turn) -> Response | None:
    request = turn.request
    size = _declared_size(turn) if request.kind == "data" and request.method == "PUT" else None
    if size is None or len(request.body) <= size:
        return None
    turn.upstream.send(Request("PUT", request.path, request.query, (), request.body[:size]))
    return Response.error(413, "payload_too_large", "the body is longer than declared")


# --- VER-6.f: 400 before 404 before 409 -------------------------------------------------------


def _holds_newest(turn: Turn) -> bool:
    """The request's token is the newest of its artifact (so the token is no error)."""
    body = body_of(turn.request)
    with turn.lock:
        newest = turn.t.newest.get(str(body.get("artifact")))
    return newest is not None and newest.token == body.get("token")


def _step_conflict(reply: Response, turn: Turn) -> Response:
    """The 409 a write of this version would get for its step (the reply if none)."""
    if not _holds_newest(turn):
        return reply
    body = body_of(turn.request)
    step = step_of(body.get("version"))
    listed = versions_of(turn.upstream, key_of(turn.request), str(body.get("artifact")))
    if step is None or not listed:
        return reply
    if any(r.get("version") == body.get("version") for r in listed):
        return Response.error(409, "version_exists", "the version is committed")
    if step <= max(step_of(r.get("version")) or 0 for r in listed):
        return Response.error(409, "not_after_latest", "the step is not after the latest")
    return reply


def _unknown_upload_first(reply: Response, turn: Turn) -> Response:
    if not _holds_newest(turn):
        return reply
    with turn.lock:
        known = str(body_of(turn.request).get("upload")) in turn.t.uploads
    return reply if known else Response.error(404, "not_found", "no such upload")


def _unknown_version_first(reply: Response, turn: Turn) -> Response:
    body = body_of(turn.request)
    with turn.lock:
        info = turn.t.tokens.get(str(body.get("token")))
    if info is not None and info.artifact == body.get("artifact"):
        return reply
    listed = versions_of(turn.upstream, key_of(turn.request), str(body.get("artifact")))
    if any(r.get("version") == body.get("version") for r in listed):
        return reply
    return Response.error(404, "not_found", "no such version")


def _names_upload(request: Request) -> bool:
    return body_of(request).get("upload") is not None


rows(
    # --- VER-6.a
    Row("ver-streamed-put-answers-an-empty-body", "VER-6.a",
        "a streamed file's PUT answers 200 with no name, size or sha256",
        On(kind="data"), answer=put_answer(lambda data, turn: {}), tracked=True),
    Row("ver-streamed-put-answers-the-sha256-of-nothing", "VER-6.a",
        "a streamed file's PUT answers the right size and the sha256 of no bytes",
        On(kind="data"), answer=put_answer(lambda data, turn: {**data, "sha256": _sha(b"")}),
        tracked=True),
    Row("ver-streamed-put-answers-the-last-segment-of-a-nested-name", "VER-6.a",
        "a streamed PUT of 'opt/state.bin' answers name 'state.bin'",
        On(kind="data"), answer=put_answer(
            lambda data, turn: {**data, "name": data["name"].rsplit("/", 1)[-1]}
            if isinstance(data.get("name"), str) else None), tracked=True),
    Row("ver-chunked-put-refused-with-411", "VER-6.a",
        "a PUT without a Content-Length (chunked) gets 411 Length Required",
        On(kind="data", when=lambda r: r.method == "PUT" and _chunked(r)),
        instead=Response.error(411, "length_required", "a PUT needs a Content-Length")),
    Row("ver-streamed-put-of-no-bytes-with-a-length-not-stored", "VER-6.a",
        "a streamed file's PUT with Content-Length: 0 answers 200 and stores nothing",
        DATA, serve=_empty_put_not_stored, tracked=True),
    # Sizes summed from those declared at write time; the files' own entries are right.
    Row("ver-version-size-leaves-out-streamed-files", "VER-6.a",
        "a Version's size is the sum of its declared files only, not its streamed ones",
        On(replies="any"), answer=noted_then_shown(_declared_total, _with_declared_size),
        tracked=True),
    # --- VER-6.b
    Row("ver-streamed-put-again-keeps-the-first-bytes", "VER-6.b",
        "a later PUT of a streamed file before the commit answers 200 and changes nothing",
        DATA, serve=_later_put_ignored, tracked=True),
    Row("ver-put-after-the-commit-changes-the-versions-bytes", "VER-6.b",
        "a PUT after the commit makes the version's URLs serve the new bytes",
        ALL, serve=_late_put_noted, answer=_versions_made_and_read, tracked=True),
    # A streamed file keeps every body PUT to it.
    Row("ver-commit-list-with-an-earlier-puts-values-commits-those-bytes", "VER-6.b",
        "after a second PUT, a commit listing the first PUT's values commits those",
        ALL, serve=_kept, answer=lambda reply, turn: _earlier_put_committed(reply, turn)
        if turn.request.endpoint == "versions/commit" and error_code(reply) == "incomplete"
        else reply, tracked=True),
    # The size was recorded once, at the first PUT.
    Row("ver-replaced-streamed-file-reports-its-first-size", "VER-6.b",
        "a streamed file PUT twice shows the first PUT's size in the Version",
        ALL, serve=_kept, answer=noted_then_shown(_first_sizes, _with_first_sizes),
        tracked=True),
    # --- VER-6.c
    Row("ver-commit-list-missing-a-streamed-file-filled-in", "VER-6.c",
        "a commit that does not list a streamed file takes the bytes it received",
        On(COMMIT, replies="error", code="incomplete"), answer=commit_list_retried(_filled_in),
        tracked=True),
    Row("ver-commit-list-with-wrong-values-takes-the-received-ones", "VER-6.c",
        "a commit listing a streamed file with a wrong size or sha256 succeeds",
        On(COMMIT, replies="error", code="incomplete"),
        answer=commit_list_retried(_received_values), tracked=True),
    Row("ver-upload-refused-for-its-list-never-commits", "VER-6.c",
        "after a commit refused 409 incomplete for its list, every commit is refused",
        On(COMMIT, replies="any"), serve=_spoiled, answer=noted("spoiled", _spoils)),
    Row("ver-commit-listing-a-declared-file-gets-400", "VER-6.c",
        "a commit listing a declared file with its declared values gets 400",
        On(COMMIT, replies="any"), serve=_lists_a_declared_file, tracked=True),
    Row("ver-commit-list-with-wrong-values-of-a-declared-file-accepted", "VER-6.c",
        "a commit listing a declared file with another size or sha256 succeeds",
        On(COMMIT, replies="error", code="incomplete"),
        answer=commit_list_retried(_declared_values), tracked=True),
    # --- VER-6.d
    Row("ver-commit-list-naming-other-files-ignores-them", "VER-6.d",
        "a commit listing a file that is not of the upload succeeds without it",
        On(COMMIT, replies="error", code="invalid_argument"),
        answer=commit_list_retried(_without_other_files), tracked=True),
    Row("ver-commit-list-naming-a-file-twice-gets-409", "VER-6.d",
        "a commit listing one file twice gets 409 incomplete instead of 400",
        On(COMMIT, replies="error", code="invalid_argument", when=_named_twice),
        answer=error(409, "incomplete", "a file is listed twice")),
    Row("ver-commit-list-names-matched-ignoring-case", "VER-6.d",
        "a commit listing 'S.BIN' for the upload's file 's.bin' is accepted",
        On(COMMIT, replies="error", code="invalid_argument"),
        answer=commit_list_retried(_names_of_the_upload), tracked=True),
    # --- VER-6.e
    Row("ver-streamed-put-past-the-limit-answers-200", "VER-6.e",
        "a streamed file's PUT past the limit answers 200 instead of 413",
        DATA, answer=_past_limit(lambda reply, turn, found: _answer(found[1],
                                                                    turn.request.body)),
        tracked=True),
    Row("ver-streamed-put-past-the-limit-empties-the-file", "VER-6.e",
        "a refused streamed PUT past the limit leaves the file with no bytes",
        DATA, answer=_past_limit(_emptied), tracked=True),
    # The limit checked with >=.
    Row("ver-streamed-put-of-exactly-the-limit-gets-413", "VER-6.e",
        "a streamed file's PUT of exactly the limit's bytes gets 413",
        ALL, serve=_limit_reached, answer=_limit_learned, tracked=True),
    # The limit is checked against Content-Length only.
    Row("ver-chunked-streamed-put-past-the-limit-answers-200", "VER-6.e",
        "a chunked streamed PUT past the limit answers 200 instead of 413",
        On(kind="data", replies="any", when=_chunked),
        answer=_past_limit(lambda reply, turn, found: _answer(found[1], turn.request.body)),
        tracked=True),
    # --- VER-6.f
    Row("ver-write-malformed-of-an-old-step-gets-409", "VER-6.f",
        "a write wrong in its files for a committed or older step gets 409 before 400",
        On(WRITE, replies="error", code="invalid_argument",
           when=lambda r: not _names_upload(r)), answer=_step_conflict, tracked=True),
    Row("ver-write-into-an-unknown-upload-of-an-old-step-gets-409", "VER-6.f",
        "a write of an old step naming an unknown upload gets 409 before 404",
        On(WRITE, replies=404, when=_names_upload), answer=_step_conflict, tracked=True),
    Row("ver-commit-of-an-unknown-upload-with-a-bad-list-gets-404", "VER-6.f",
        "a commit of an unknown upload with a malformed files list gets 404 before 400",
        On(COMMIT, replies="error", code="invalid_argument"), answer=_unknown_upload_first,
        tracked=True),
    Row("ver-delete-of-an-unknown-version-with-a-bad-token-gets-404", "VER-6.f",
        "a delete of an unknown version with a bad token gets 404 before 400",
        On(("versions/delete",), replies="error", code="invalid_argument",
           when=lambda r: step_of(body_of(r).get("version")) is not None),
        answer=_unknown_version_first, tracked=True),
    # --- OPEN-2.a: a relaunch's resume_from of streamed files
    Row("open-resume-from-gives-streamed-files-their-declared-nothing", "OPEN-2.a",
        "resume_from lists a streamed file with size 0 and the sha256 of no bytes",
        On(("artifacts/open",)), answer=changed(_resumed_as_declared), tracked=True),
    # --- VER-4.e
    Row("ver-put-longer-than-declared-refused-but-its-prefix-kept", "VER-4.e",
        "a PUT longer than declared gets 413 yet its first <size> bytes are stored",
        DATA, serve=_prefix_kept, tracked=True),
)
