"""Mutants as rows: a clause, which requests a mutant bends, and how it bends the answer.

A :class:`Row` is one mutant as data: its name, clause and summary, which exchanges it
matches (:class:`On`: endpoints, kind, which replies) and how it bends them: the request
rewritten before it is sent (``ask``), an answer given instead of sending it (``instead``),
or the reply rewritten (``answer``). One interpreter, :class:`RowMutant`, plays any row;
:func:`rows` registers each row as a mutant under its name, so the proxy, the table,
``--only`` and ``--repeat`` find it as they found the class it replaced.

A row marked ``tracked`` is played by :class:`TrackedRowMutant`, which keeps the facts
of tracking.py (who opened what with which key, uploads, refused keys) for its bends to
read; one marked ``watched`` by :class:`WatchedRowMutant`, which keeps the signed URLs
handed out (reads.py). A row may play an exchange itself before it is sent (``serve``),
and its bends may keep a memory of their own in ``Turn.memory`` (the mutant's state).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.base import error_code
from conformance.mutants.base import mutant
from conformance.mutants.reads import Watching
from conformance.mutants.reads import with_headers
from conformance.mutants.tracking import Facts
from conformance.mutants.tracking import Tracked
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import body_of

__all__ = ["On", "Row", "RowMutant", "TrackedRowMutant", "Turn", "body", "dropped", "error",
           "headers", "internal_error", "refused_when", "row_mutant", "rows", "sent_upload",
           "set_fields", "versions", "WatchedRowMutant", "changed", "noted", "recalled", "retried"]

Json = dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One exchange as a bend sees it: the request sent, the upstream (for extra calls),
    and, for a tracked row, the facts so far, read under ``lock``."""

    request: Request
    upstream: Upstream
    lock: threading.Lock
    facts: Facts | None = None
    #: The tracked row's bookkeeping, for an exchange the bend makes itself (held lock).
    observe: Callable[[Request, Response], None] | None = None
    #: The mutant's own memory (its ``state``), read and written under ``lock``.
    memory: dict[str, Any] = field(default_factory=dict)
    #: A watched row's signed URLs handed out so far (``seen.info(request)``, ``known``).
    seen: Watching | None = None

    @property
    def t(self) -> Facts:
        assert self.facts is not None, "a bend that reads facts belongs to a tracked row"
        return self.facts


#: How a row bends a reply: the upstream's reply and its turn to the reply sent back.
Bend = Callable[[Response, Turn], Response]


@dataclass(frozen=True)
class On:
    """Which exchanges a row bends: requests of ``kind`` (``any``: API, data plane and
    the rest) to one of ``endpoints`` (any if empty) for which ``when`` holds, and of
    their replies those ``replies`` names: ``ok`` (2xx with a JSON object), ``error`` (a
    contract error; ``code``: with that code), ``any``, or one status."""

    endpoints: tuple[str, ...] = ()
    kind: str = "api"
    replies: str | int = "ok"
    when: Callable[[Request], bool] | None = None
    code: str | None = None

    def asks(self, request: Request) -> bool:
        return (self.kind in ("any", request.kind)
                and (not self.endpoints or request.endpoint in self.endpoints)
                and (self.when is None or self.when(request)))

    def answers(self, response: Response) -> bool:
        if isinstance(self.replies, int):
            return response.status == self.replies
        if self.replies == "ok":
            return response.ok and isinstance(response.json(), dict)
        if self.replies == "error":
            code = error_code(response)
            return code is not None and self.code in (None, code)
        return True


@dataclass(frozen=True)
class Row:
    """One mutant: what it is (name, clause, summary), where it acts (``on``) and how."""

    name: str
    clause: str
    summary: str
    on: On
    ask: Callable[[Request], Request] | None = None
    instead: Response | None = None
    answer: Bend | None = None
    tracked: bool = False
    #: Plays the exchange itself before it is sent: the reply, or None to send it; a
    #: tracked row's may give another request to send instead.
    serve: Callable[[Turn], Request | Response | None] | None = None
    watched: bool = False


class RowMutant(Mutant):
    """The interpreter: plays its class's :attr:`row` on every exchange."""

    row: ClassVar[Row]

    def handle(self, request: Request, upstream: Upstream) -> Response:
        row = self.row
        if not row.on.asks(request):
            return self.send(request, upstream)
        if row.instead is not None:
            return row.instead
        served = row.serve(self.turn(request, upstream)) if row.serve else None
        if served is not None:
            return served
        request = row.ask(request) if row.ask else request
        return self.bent(request, self.send(request, upstream), self.turn(request, upstream))

    def send(self, request: Request, upstream: Upstream) -> Response:
        return upstream.send(request)

    def turn(self, request: Request, upstream: Upstream) -> Turn:
        return Turn(request, upstream, self.lock, memory=self.state)

    def bent(self, request: Request, reply: Response, turn: Turn) -> Response:
        row = self.row
        if row.answer is None or not row.on.asks(request) or not row.on.answers(reply):
            return reply
        return row.answer(reply, turn)


class TrackedRowMutant(Tracked, RowMutant):
    """The interpreter of a tracked row: every exchange is observed (tracking.py) whether
    the row matches it or not, and the bends read the facts."""

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        row = self.row
        if not row.on.asks(request):
            return None
        if row.instead is not None:
            return row.instead
        served = row.serve(self.turn(request, upstream)) if row.serve else None
        if served is not None:
            return served
        return row.ask(request) if row.ask else None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        return self.bent(request, response, self.turn(request, upstream))

    def turn(self, request: Request, upstream: Upstream) -> Turn:
        return Turn(request, upstream, self.lock, self.t, self.observe, self.state)


class WatchedRowMutant(RowMutant, Watching):
    """The interpreter of a watched row: every reply's signed URLs are remembered
    (reads.py) whether the row matches the exchange or not, and the bends read them."""

    def send(self, request: Request, upstream: Upstream) -> Response:
        return self.forward(request, upstream)

    def turn(self, request: Request, upstream: Upstream) -> Turn:
        return Turn(request, upstream, self.lock, memory=self.state, seen=self)


def row_mutant(row: Row) -> type[RowMutant]:
    """The mutant class that plays ``row`` (a class per row, so that each proxy run gets
    its own instance, state and lock, as with any mutant); not registered."""
    base = TrackedRowMutant if row.tracked else WatchedRowMutant if row.watched else RowMutant
    return type(f"Row_{row.name}", (base,), {
        "row": row, "name": row.name, "clause": row.clause, "summary": row.summary,
        "__doc__": row.summary, "__module__": __name__})


def rows(*table: Row) -> tuple[Row, ...]:
    """Register every row of ``table`` as a mutant named as the row."""
    for row in table:
        mutant(row_mutant(row))
    return table


# --- bends ------------------------------------------------------------------------------


def body(change: Callable[[Json], Json | None]) -> Bend:
    """The reply with its JSON object changed by ``change`` (None: left as it was)."""

    def bend(reply: Response, turn: Turn) -> Response:
        changed = change(reply.json())
        return reply if changed is None else reply.with_json(changed)

    return bend


def set_fields(**values: Any) -> Bend:
    """The reply's JSON object with ``values`` set."""
    return body(lambda obj: {**obj, **values})


def dropped(*keys: str) -> Bend:
    """The reply's JSON object without ``keys`` (left as it was if it has none of them)."""
    return body(lambda obj: {k: v for k, v in obj.items() if k not in keys}
                if any(k in obj for k in keys) else None)


def _each_version(value: Any, change: Callable[[Json], Json]) -> Any:
    if isinstance(value, list):
        return [_each_version(v, change) for v in value]
    if isinstance(value, dict):
        out = {k: _each_version(v, change) for k, v in value.items()}
        return change(out) if "version" in out and "step" in out else out
    return value


def versions(change: Callable[[Json], Json]) -> Bend:
    """Every Version object in the reply (a dict with ``version`` and ``step``, nested ones
    such as ``resume_from`` and list entries too) changed by ``change``."""
    return body(lambda obj: _each_version(obj, change))


def headers(**changes: str | None) -> Bend:
    """The reply with headers replaced (``Content_Type`` is ``Content-Type``; None drops)."""
    return lambda reply, turn: with_headers(reply, **changes)


def error(status: int, code: str, message: str) -> Bend:
    """The reply replaced by a contract error."""
    refusal = Response.error(status, code, message)
    return lambda reply, turn: refusal


def refused_when(test: Callable[[Turn], bool], status: int, code: str, message: str) -> Bend:
    """The reply replaced by a contract error when ``test`` holds for the turn."""
    refusal = Response.error(status, code, message)
    return lambda reply, turn: refusal if test(turn) else reply


def sent_upload(turn: Turn) -> UploadInfo | None:
    """The upload a (tracked) request names in its body, if the proxy saw it written."""
    with turn.lock:
        return turn.t.uploads.get(str(body_of(turn.request).get("upload")))


def internal_error() -> Response:
    """A crash as a careless server answers it."""
    return Response.error(500, "internal", "Internal server error.")


def changed(change: Callable[[Json, Turn], Json | None]) -> Bend:
    """The reply with its JSON object changed by ``change``, which also sees the turn (the
    request, the upstream for a look-up); None: left as it was."""

    def bend(reply: Response, turn: Turn) -> Response:
        new = change(reply.json(), turn)
        return reply if new is None else reply.with_json(new)

    return bend


def retried(change: Callable[[Turn], Request | None],
            took: Callable[[Response], bool] = lambda again: again.ok) -> Bend:
    """The request as ``change`` makes it (None: the reply kept) sent again, and that reply
    when ``took`` holds for it (by default: it succeeded), else the first one."""

    def bend(reply: Response, turn: Turn) -> Response:
        again = change(turn)
        if again is None:
            return reply
        second = turn.upstream.send(again)
        return second if took(second) else reply

    return bend


def noted(key: str, what: Callable[[Response, Turn], Iterable[Hashable]],
          then: Bend | None = None) -> Bend:
    """Adds ``what`` of each exchange it bends (of the reply and the turn; empty: nothing)
    to the set ``key`` of the row's memory, then bends it with ``then`` (if any)."""

    def bend(reply: Response, turn: Turn) -> Response:
        items = set(what(reply, turn))
        if items:
            with turn.lock:
                turn.memory.setdefault(key, set()).update(items)
        return then(reply, turn) if then else reply

    return bend


def recalled(key: str, item: Hashable, turn: Turn) -> bool:
    """``item`` was :func:`noted` under ``key`` in the row's memory."""
    with turn.lock:
        return item in turn.memory.get(key, set())
