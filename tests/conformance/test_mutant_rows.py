"""Mutants as rows (conformance/mutants/rows.py): one interpreter plays a row's match and
bend, against a fake upstream that records what reached it."""

from __future__ import annotations

import json

from conformance.mutants import MUTANTS
from conformance.mutants.base import Mutant, Request, Response
from conformance.mutants.rows import (
    On,
    Row,
    Turn,
    error,
    internal_error,
    noted,
    recalled,
    retried,
    row_mutant,
    set_fields,
)
from conformance.mutants.tracking import body_of

API = "/api/v1/"


class Recorder:
    """An upstream answering every request with ``reply``, keeping what it was sent."""

    def __init__(self, reply: Response) -> None:
        self.reply = reply
        self.sent: list[Request] = []

    def send(self, request: Request) -> Response:
        self.sent.append(request)
        return self.reply


def ok(body: dict[str, object]) -> Response:
    return Response(200, (("Content-Type", "application/json"),), json.dumps(body).encode())


def post(endpoint: str, body: dict[str, object] | None = None) -> Request:
    return Request("POST", API + endpoint, body=json.dumps(body or {}).encode())


def play(row: Row, request: Request, upstream: Recorder) -> Response:
    return row_mutant(row)().handle(request, upstream)


def test_a_row_is_a_mutant_with_its_name_clause_and_summary() -> None:
    row = Row("route-always-away", "API-1.d", "a write answers route away",
              On(("versions/write",)), answer=set_fields(route="away"))
    cls = row_mutant(row)
    assert issubclass(cls, Mutant)
    assert (cls.name, cls.clause, cls.summary) == (row.name, "API-1.d", row.summary)
    bent = play(row, post("versions/write"), Recorder(ok({"route": "local", "upload": "u"})))
    assert bent.json() == {"route": "away", "upload": "u"}


def test_the_rows_of_the_table_are_registered_under_their_names() -> None:
    for name in ("shape-open-artifact-missing", "auth_unknown_key_open_403",
                 "fence_invalid_open_bumps_epoch"):
        assert MUTANTS[name].row.name == name  # type: ignore[attr-defined]


def test_a_row_leaves_other_endpoints_and_other_replies_as_they_were() -> None:
    row = Row("open-route-away", "API-1.g", "an open answers route away",
              On(("artifacts/open",)), answer=set_fields(route="away"))
    assert play(row, post("versions/write"), Recorder(ok({"a": 1}))).json() == {"a": 1}
    refusal = Response.error(409, "fenced", "newer open")
    assert play(row, post("artifacts/open"), Recorder(refusal)) is refusal


def test_a_row_on_an_error_code_bends_only_that_code() -> None:
    row = Row("fenced-as-404", "FENCE-2.e", "fenced answered as not found",
              On(("versions/commit",), replies="error", code="fenced"),
              answer=error(404, "not_found", "no such token"))
    fenced = play(row, post("versions/commit"),
                  Recorder(Response.error(409, "fenced", "newer open")))
    assert (fenced.status, fenced.json()["error"]["code"]) == (404, "not_found")
    invalid = Response.error(400, "invalid_argument", "bad token")
    assert play(row, post("versions/commit"), Recorder(invalid)) is invalid


def test_a_row_answering_instead_never_reaches_the_upstream() -> None:
    row = Row("array-open-crashes", "API-1.f", "an array body crashes",
              On(("artifacts/open",), when=lambda r: isinstance(r.json(), list)),
              instead=internal_error())
    upstream = Recorder(ok({}))
    array = Request("POST", API + "artifacts/open", body=b"[]")
    assert play(row, array, upstream).status == 500
    assert upstream.sent == []
    play(row, post("artifacts/open"), upstream)
    assert len(upstream.sent) == 1


def test_a_tracked_rows_bend_reads_the_opens_seen_before() -> None:
    def earlier_epochs(reply: Response, turn: Turn) -> Response:
        with turn.lock:
            epochs = [o.epoch for o in turn.t.opens.get("p/a", [])]
        return reply.with_json({**reply.json(), "seen": epochs})

    mutant = row_mutant(Row("opens-seen", "FENCE-1.a", "an open answers the epochs seen",
                            On(("artifacts/open",)), answer=earlier_epochs, tracked=True))()
    opened = {"artifact": "p/a", "epoch": 1, "holder": "h", "token": "tk_1"}
    upstream = Recorder(ok(opened))
    request = post("artifacts/open", {"artifact": "p/a", "holder": "h"})
    first = mutant.handle(request, upstream)
    upstream.reply = ok({**opened, "epoch": 2, "token": "tk_2"})
    second = mutant.handle(request, upstream)
    assert (first.json()["seen"], second.json()["seen"]) == ([1], [1, 2])


def test_a_row_that_serves_a_request_answers_it_without_the_upstream() -> None:
    refusal = Response.error(403, "forbidden", "no deletes")
    row = Row("deletes-refused", "AUTH-3.c", "every delete is refused",
              On(("versions/delete",), replies="any"),
              serve=lambda turn: refusal if turn.request.method == "POST" else None)
    upstream = Recorder(ok({}))
    assert play(row, post("versions/delete"), upstream) is refusal
    assert upstream.sent == []
    get = Request("GET", API + "versions/delete")
    assert play(row, get, upstream).status == 200
    assert upstream.sent == [get]


def test_a_rows_memory_lasts_across_exchanges_of_one_run_only() -> None:
    def counted(reply: Response, turn: Turn) -> Response:
        with turn.lock:
            turn.memory["n"] = turn.memory.get("n", 0) + 1
            return reply.with_json({"n": turn.memory["n"]})

    row = Row("count-opens", "FENCE-1.a", "an open answers how many came before",
              On(("artifacts/open",)), answer=counted)
    first, second = row_mutant(row)(), row_mutant(row)()
    upstream = Recorder(ok({}))
    assert [first.handle(post("artifacts/open"), upstream).json()["n"] for _ in range(2)] \
        == [1, 2]
    assert second.handle(post("artifacts/open"), upstream).json() == {"n": 1}


def test_a_watched_rows_bend_knows_what_a_data_url_points_at() -> None:
    def named(reply: Response, turn: Turn) -> Response:
        info = turn.seen.info(turn.request) if turn.seen else None
        return reply if info is None else reply.with_body(str(info["name"]).encode())

    mutant = row_mutant(Row("file-names-served", "READ-2.a", "a URL serves its file's name",
                            On(kind="data", replies="any"), answer=named, watched=True))()
    read = ok({"artifact": "p/a", "version": "step-00000001",
               "files": [{"name": "model.pt", "size": 3, "url": "http://h/d/x?sig=1"}]})
    mutant.handle(Request("GET", API + "versions/read", (("urls", "1"),)), Recorder(read))
    data = Response(200, (), b"abc")
    served = mutant.handle(Request("GET", "/d/x", (("sig", "1"),)), Recorder(data))
    assert served.body == b"model.pt"
    assert mutant.handle(Request("GET", "/d/y", (("sig", "1"),)), Recorder(data)) is data


def test_a_noted_item_is_recalled_by_later_exchanges_of_the_row() -> None:
    def refused_if_seen(turn: Turn) -> Response | None:
        seen = recalled("artifacts", body_of(turn.request).get("artifact"), turn)
        return Response.error(409, "has_checkpoints", "seen before") if seen else None

    row = Row("second-open-refused", "OPEN-1.a", "an artifact opened once is refused after",
              On(("artifacts/open",), replies="any"), serve=refused_if_seen,
              answer=noted("artifacts", lambda reply, turn: {body_of(turn.request).get(
                  "artifact")} if reply.ok else ()))
    mutant, upstream = row_mutant(row)(), Recorder(ok({}))
    opened = post("artifacts/open", {"artifact": "p/a"})
    assert mutant.handle(opened, upstream).status == 200
    assert mutant.handle(post("artifacts/open", {"artifact": "p/b"}), upstream).status == 200
    assert mutant.handle(opened, upstream).status == 409
    assert len(upstream.sent) == 2


def test_a_tracked_rows_serve_may_send_another_request_built_from_the_facts() -> None:
    def newest_token(turn: Turn) -> Request | None:
        with turn.lock:
            newest = turn.t.newest.get("p/a")
        sent = turn.request.json()
        return None if newest is None else turn.request.with_json({**sent, "token": newest.token})

    mutant = row_mutant(Row("writes-take-the-newest-token", "FENCE-2.a",
                            "a write is sent with the artifact's newest token",
                            On(("versions/write",)), serve=newest_token, tracked=True))()
    opened = ok({"artifact": "p/a", "epoch": 2, "holder": "h", "token": "tk_new"})
    mutant.handle(post("artifacts/open", {"artifact": "p/a"}), Recorder(opened))
    upstream = Recorder(ok({"upload": "u", "files": []}))
    mutant.handle(post("versions/write", {"artifact": "p/a", "token": "tk_old"}), upstream)
    assert [r.json()["token"] for r in upstream.sent] == ["tk_new"]


class Replies(Recorder):
    """An upstream answering with ``replies`` in turn."""

    def __init__(self, *replies: Response) -> None:
        super().__init__(replies[0])
        self.replies = list(replies)

    def send(self, request: Request) -> Response:
        self.reply = self.replies.pop(0)
        return super().send(request)


def test_a_retried_row_answers_the_retry_only_when_it_succeeds() -> None:
    row = Row("open-retried-as-latest", "OPEN-3.a", "a refused open is retried as latest",
              On(("artifacts/open",), replies=409),
              answer=retried(lambda turn: turn.request.with_json({"resume": "latest"})))
    refusal = Response.error(409, "has_checkpoints", "versions")
    failed = Replies(refusal, Response.error(403, "forbidden", "no"))
    assert play(row, post("artifacts/open", {"resume": None}), failed) is refusal
    assert [r.json() for r in failed.sent] == [{"resume": None}, {"resume": "latest"}]
    opened = Replies(refusal, ok({"epoch": 2}))
    assert play(row, post("artifacts/open", {"resume": None}), opened).json() == {"epoch": 2}
