"""Mutants of a streamed file PUT again (VER-6.b): a later PUT before the commit that
changes nothing, a PUT after the commit that changes the version's bytes, a commit listing
an earlier PUT's values that commits those bytes, a Version showing the first PUT's size.
One tracked row each (rows.py), keeping every PUT's request in the row's memory."""

from __future__ import annotations

from urllib.parse import urlsplit

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.streamed_files import ALL
from conformance.mutants.streamed_files import DATA
from conformance.mutants.streamed_files import Json
from conformance.mutants.streamed_files import answered
from conformance.mutants.streamed_files import listed_files
from conformance.mutants.streamed_files import noted_then_shown
from conformance.mutants.streamed_files import sha
from conformance.mutants.streamed_files import streamed_put
from conformance.mutants.streamed_files import upload_of
from conformance.mutants.tracking import body_of


def _later_put_ignored(turn: Turn) -> Response | None:
    found = streamed_put(turn)
    if found is None:
        return None
    up, name = found
    with turn.lock:
        earlier = name in up.puts
    return answered(name, turn.request.body) if earlier else None


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
    for f in listed_files(turn.request):
        puts = history(turn, up.upload, str(f.get("name")))
        old = next((p for p in puts[:-1] if len(p.body) == f.get("size")
                    and sha(p.body) == f.get("sha256")), None)
        if old is not None and (len(puts[-1].body), sha(puts[-1].body)) != \
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


rows(
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
)
