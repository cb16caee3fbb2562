"""Mutants of READ-3: ranged GETs and HEADs of a version's files; one watched row each
(rows.py), tied to the file a data-plane request fetches by the URLs handed out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.reads import MIB
from conformance.mutants.reads import bytes_reply
from conformance.mutants.reads import parse_range
from conformance.mutants.reads import unsatisfiable
from conformance.mutants.reads import with_headers
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows

Info = dict[str, Any]
Span = tuple[int, int] | None | str
#: Every data-plane exchange: a watched row sees them all and picks its own.
DATA = On(kind="data", replies="any")


def _file(turn: Turn) -> Info | None:
    """What a GET or HEAD's URL points at, when it was handed out with a known size."""
    info = turn.seen.info(turn.request) if turn.seen else None
    if info is None or turn.request.method not in ("GET", "HEAD") \
            or not isinstance(info.get("size"), int):
        return None
    return info


def ranged(play: Callable[[Turn, Info, Span], Response | None]) -> Callable[[Turn],
                                                                              Response | None]:
    """Serves a ranged GET or HEAD of a known file with ``play`` (the turn, the file, the
    range parsed against its size); None: sent as it was."""

    def serve(turn: Turn) -> Response | None:
        info = _file(turn)
        if info is None or not turn.request.header("Range"):
            return None
        return play(turn, info, parse_range(turn.request.header("Range"), info["size"]))

    return serve


def partial(rewrite: Callable[[Response, tuple[int, int], int, str], Response]) -> Bend:
    """A 206 to a satisfiable range of a known file rewritten by ``rewrite`` (the reply,
    the span, the file's size, the Range asked)."""

    def bend(reply: Response, turn: Turn) -> Response:
        info = _file(turn)
        if info is None or reply.status != 206:
            return reply
        span = parse_range(turn.request.header("Range"), info["size"])
        if not isinstance(span, tuple):
            return reply
        return rewrite(reply, span, info["size"], turn.request.header("Range") or "")

    return bend


def _asked(turn: Turn, bound: int) -> str:
    """The start (0) or end (2) of the Range asked, as written."""
    return (turn.request.header("Range") or "").strip().removeprefix("bytes=").partition(
        "-")[bound]


def _with_range(turn: Turn, value: str | None) -> Response:
    return turn.upstream.send(turn.request.with_header("Range", value))


def _mid_byte_gives_two(turn: Turn, info: Info, span: Span) -> Response | None:
    if isinstance(span, tuple) and span[0] == span[1] and 0 < span[0] < info["size"] - 1:
        return _with_range(turn, f"bytes={span[0]}-{span[0] + 1}")
    return None


def _end_past_size_refused(turn: Turn, info: Info, span: Span) -> Response | None:
    end = _asked(turn, 2)
    if isinstance(span, tuple) and end.isdigit() and int(end) >= info["size"]:
        return unsatisfiable(info["size"])
    return None


def _shifted_past_first_mib(turn: Turn, info: Info, span: Span) -> Response | None:
    if not (isinstance(span, tuple) and span[0] >= MIB):
        return None
    a, b = span
    got = _with_range(turn, f"bytes={a - 1}-{b - 1}")
    return with_headers(got, Content_Range=f"bytes {a}-{b}/{info['size']}") \
        if got.status == 206 else got


def _head_of_second_file_whole(turn: Turn, info: Info, span: Span) -> Response | None:
    if turn.request.method != "HEAD" or info["index"] < 1 or not isinstance(span, tuple):
        return None
    whole = _with_range(turn, None)
    return whole if whole.status != 200 else with_headers(whole, Content_Range=None)


def _beyond_end_whole(turn: Turn, info: Info, span: Span) -> Response | None:
    start = _asked(turn, 0)
    if span is None and start.isdigit() and int(start) > info["size"] > 0:
        return _with_range(turn, None)
    return None


def _last_byte_unsatisfiable(turn: Turn) -> Response | None:
    info = _file(turn)
    start = _asked(turn, 0)
    if info is not None and info["size"] > 1 and start.isdigit() \
            and int(start) == info["size"] - 1:
        return unsatisfiable(info["size"])
    return None


def _ranged_head_whole_length(reply: Response, turn: Turn) -> Response:
    info = _file(turn)
    if info is not None and turn.request.method == "HEAD" and reply.status == 206:
        return with_headers(reply, Content_Length=str(info["size"]))
    return reply


def _cut_range_announces_asked_end(reply: Response, span: tuple[int, int], size: int,
                                   asked: str) -> Response:
    end = asked.strip().removeprefix("bytes=").partition("-")[2]
    if not end.isdigit() or int(end) <= span[1]:
        return reply
    return with_headers(reply, Content_Range=f"bytes {span[0]}-{end}/{size}")


rows(
    # --- READ-3.a
    Row("read-range-single-mid-byte-gives-two", "READ-3.a",
        "a one-byte range bytes=a-a in the middle of a file answers bytes a..a+1",
        DATA, serve=ranged(_mid_byte_gives_two), watched=True),
    Row("read-range-end-past-size-refused", "READ-3.a",
        "bytes=a-b with a inside the file and b past its end answers 416",
        DATA, serve=ranged(_end_past_size_refused), watched=True),
    # The Content-Range still names the asked range: parallel downloads reassemble wrong.
    Row("read-range-past-first-mib-shifted-by-one", "READ-3.a",
        "ranges starting after 1 MiB return the bytes one position earlier",
        DATA, serve=ranged(_shifted_past_first_mib), watched=True),
    Row("read-range-ignored-on-head-of-second-file", "READ-3.a",
        "ranged HEAD of a version's second file answers 200 without Content-Range",
        DATA, serve=ranged(_head_of_second_file_whole), watched=True),
    Row("read-content-range-end-one-past-the-last-byte", "READ-3.a",
        "a 206 says Content-Range bytes a-(b+1)/size for bytes a..b",
        DATA, answer=partial(lambda reply, span, size, asked: with_headers(
            reply, Content_Range=f"bytes {span[0]}-{span[1] + 1}/{size}")), watched=True),
    Row("read-content-range-total-is-the-range-length", "READ-3.a",
        "a 206 says Content-Range bytes a-b/(b-a+1) instead of bytes a-b/size",
        DATA, answer=partial(lambda reply, span, size, asked: with_headers(
            reply, Content_Range=f"bytes {span[0]}-{span[1]}/{span[1] - span[0] + 1}")),
        watched=True),
    Row("read-cut-range-announces-the-asked-end", "READ-3.a",
        "bytes=a-b past the end sends a..size-1 but says Content-Range bytes a-b/size",
        DATA, answer=partial(_cut_range_announces_asked_end), watched=True),
    # ``>=`` on the last index.
    Row("read-range-starting-at-the-last-byte-gets-416", "READ-3.a",
        "bytes=(size-1)-b answers 416 instead of 206 and the last byte",
        DATA, serve=_last_byte_unsatisfiable, watched=True),
    # The length computed before the range was applied.
    Row("read-ranged-head-gives-the-whole-files-content-length", "READ-3.a",
        "HEAD with Range: bytes=a-b answers Content-Length of the whole file",
        DATA, answer=_ranged_head_whole_length, watched=True),
    # --- READ-3.b (a range starting exactly at the end is still 416)
    Row("read-range-start-beyond-end-gives-whole-file", "READ-3.b",
        "a range starting after the end (not at it) answers 200 and the whole file",
        DATA, serve=ranged(_beyond_end_whole), watched=True),
    Row("read-range-on-empty-file-gives-200", "READ-3.b",
        "a ranged GET or HEAD of a zero-byte file answers 200 instead of 416",
        DATA, serve=ranged(lambda turn, info, span: bytes_reply(
            b"", 0, None, turn.request.method == "HEAD") if info["size"] == 0 else None),
        watched=True),
    Row("read-range-unsatisfiable-head-gives-200", "READ-3.b",
        "HEAD with a range past the end answers 200 for the whole file",
        DATA, serve=ranged(lambda turn, info, span: _with_range(turn, None)
                           if turn.request.method == "HEAD" and span is None else None),
        watched=True),
)
