"""Mutants of the size limits of a PUT: a streamed PUT past the server's limit answered
200, emptying the file, refused at exactly the limit or let through when chunked (VER-6.e),
and a PUT longer than its declared size refused yet its prefix kept (VER-4.e). One tracked
row each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.streamed_files import ALL
from conformance.mutants.streamed_files import DATA
from conformance.mutants.streamed_files import answered
from conformance.mutants.streamed_files import chunked
from conformance.mutants.streamed_files import listed_files
from conformance.mutants.streamed_files import streamed_put
from conformance.mutants.tracking import UploadInfo


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
    sizes = [f.get("size") for f in listed_files(turn.request) if isinstance(f.get("size"), int)]
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


rows(
    Row("ver-streamed-put-past-the-limit-answers-200", "VER-6.e",
        "a streamed file's PUT past the limit answers 200 instead of 413",
        DATA, answer=_past_limit(lambda reply, turn, found: answered(found[1],
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
        On(kind="data", replies="any", when=chunked),
        answer=_past_limit(lambda reply, turn, found: answered(found[1], turn.request.body)),
        tracked=True),
    Row("ver-put-longer-than-declared-refused-but-its-prefix-kept", "VER-4.e",
        "a PUT longer than declared gets 413 yet its first <size> bytes are stored",
        DATA, serve=_prefix_kept, tracked=True),
)
