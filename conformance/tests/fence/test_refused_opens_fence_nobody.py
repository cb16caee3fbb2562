"""Refused opens change nothing (FENCE-4, AUTH-2, OPEN-3, FORK-1): every kind of refused or
invalid open, twice, against an artifact with three versions and a live holder.

After each refusal the artifact and the fork source look exactly as before, the holder keeps
writing and committing, and the next successful open names the holder it really fenced.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import open_raw
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.names import edge_name
from conformance.names import scoped_name
from conformance.names import scoped_prefixes
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot
from conformance.rules import RuleViolation
from conformance.rules import check
from conformance.rules import check_equal


@dataclass(frozen=True)
class Ctx:
    env: Env
    api: Client
    name: str
    src: str


@dataclass(frozen=True)
class Refusal:
    """One kind of refused open: how to send it and which answers are right."""

    send: Callable[[Ctx], Reply]
    allowed: tuple[tuple[int, str], ...]
    clause: str


def _key(ctx: Ctx, key: str | None) -> Client:
    return ctx.api.with_key(key)


REFUSALS: dict[str, Refusal] = {
    "fresh": Refusal(
        lambda c: c.api.open(c.name, None, None, "intruder"),
        ((409, "has_checkpoints"),),
        "OPEN-3.a",
    ),
    "fork-into-versions": Refusal(
        lambda c: c.api.open(c.name, f"o41://{c.src}/step-00000001", None, "intruder"),
        ((409, "not_empty"),),
        "FORK-1.a",
    ),
    "fork-missing-version": Refusal(
        lambda c: c.api.open(c.name, f"o41://{c.src}/step-00000002", None, "intruder"),
        ((404, "not_found"), (409, "not_empty")),
        "FORK-1.b",
    ),
    "fork-missing-artifact": Refusal(
        lambda c: c.api.open(c.name, f"o41://{c.src}-gone/step-00000001", None, "intruder"),
        ((404, "not_found"), (409, "not_empty")),
        "FORK-1.b",
    ),
    "fork-malformed": Refusal(
        lambda c: c.api.open(c.name, f"o41://{c.src}/step-1", None, "intruder"),
        ((400, "invalid_argument"),),
        "FORK-1.c",
    ),
    "resume-unknown-word": Refusal(
        lambda c: c.api.open(c.name, "earliest", None, "intruder"),
        ((400, "invalid_argument"),),
        "FORK-1.c",
    ),
    "place-empty-cloud": Refusal(
        lambda c: open_raw(c.api, c.name, "latest", {"cloud": "", "region": "x"}, "intruder"),
        ((400, "invalid_argument"),),
        "FENCE-4.a",
    ),
    "place-without-region": Refusal(
        lambda c: open_raw(c.api, c.name, "latest", {"cloud": "aws"}, "intruder"),
        ((400, "invalid_argument"),),
        "FENCE-4.a",
    ),
    "no-key": Refusal(
        lambda c: _key(c, None).open(c.name, "latest", None, "intruder"),
        ((401, "unauthenticated"),),
        "AUTH-1.a",
    ),
    "unknown-key": Refusal(
        lambda c: _key(c, f"{c.env.key}x").open(c.name, "latest", None, "intruder"),
        ((401, "unauthenticated"),),
        "AUTH-1.b",
    ),
    "read-key": Refusal(
        lambda c: _key(c, c.env.read_key).open(c.name, "latest", None, "intruder"),
        ((403, "forbidden"),),
        "AUTH-2.b",
    ),
    "read-key-fresh": Refusal(
        lambda c: _key(c, c.env.read_key).open(c.name, None, None, "intruder"),
        ((403, "forbidden"), (409, "has_checkpoints")),
        "AUTH-2.b",
    ),
    "scoped-key-outside": Refusal(
        lambda c: _key(c, c.env.scoped_key).open(c.name, "latest", None, "intruder"),
        ((403, "forbidden"),),
        "AUTH-2.b",
    ),
}
#: The clause a changed state breaks, for refusals whose own clause says "changes nothing".
UNCHANGED = {
    "fresh": "OPEN-3.b",
    "fork-into-versions": "FORK-1.a",
    "read-key": "AUTH-2.b",
    "read-key-fresh": "AUTH-2.b",
    "scoped-key-outside": "AUTH-2.b",
}
NEEDS = {
    "read-key": pytest.mark.read_key,
    "read-key-fresh": pytest.mark.read_key,
    "scoped-key-outside": pytest.mark.scoped_key,
}


def _params() -> list:
    out = []
    for kind in REFUSALS:
        clauses = dict.fromkeys(
            ["FENCE-4.a", REFUSALS[kind].clause, UNCHANGED.get(kind, "FENCE-4.a"), "FENCE-2.d"]
        )
        marks = [pytest.mark.rule(*clauses)]
        if kind in NEEDS:
            marks.append(NEEDS[kind])
        out.append(pytest.param(kind, marks=marks, id=kind))
    return out


def _expect_one_of(reply: Reply, allowed: tuple[tuple[int, str], ...], clause: str) -> None:
    if (reply.status, reply.code) not in allowed:
        raise RuleViolation(clause, f"refused open: expected one of {allowed}, got {reply.brief()}")


@pytest.mark.parametrize("kind", _params())
def test_refused_open_changes_nothing(o41_env: Env, o41_api: Client, kind: str) -> None:
    refusal = REFUSALS[kind]
    salt = secrets.token_hex(3)
    name, src = edge_name(o41_env.prefix, "held", salt), edge_name(o41_env.prefix, "src", salt)
    s = open_box(o41_api, src, "box-s")
    commit_ok(o41_api, s, "step-00000001", make_files({"m": 8}, 9))
    a = open_box(o41_api, name, "box-a", "gcp/europe-west4")
    for step in (1, 2, 3):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 8}, step))
    ctx = Ctx(o41_env, o41_api, name, src)
    clause = UNCHANGED.get(kind, "FENCE-4.a")
    for attempt, step in ((1, 4), (2, 5)):
        before, source = snapshot(o41_api, name), snapshot(o41_api, src)
        _expect_one_of(refusal.send(ctx), refusal.allowed, refusal.clause)
        what = f"refused open ({kind}, attempt {attempt})"
        expect_unchanged(o41_api, name, before, clause, what)
        expect_unchanged(o41_api, src, source, "FORK-1.a", f"{what}, on the fork source")
        expect_writer_alive(o41_api, a, f"step-{step:08d}", "FENCE-4.a", what)
    nxt = expect_ok(o41_api.open(name, "latest", None, "box-next"), "FENCE-4.a", "next open")
    check_equal(
        nxt.get("fenced"),
        {"epoch": a.epoch, "holder": "box-a"},
        "FENCE-4.a",
        f"whom the next open fenced after two refused opens ({kind})",
    )
    check(nxt["epoch"] > a.epoch, "FENCE-1.a", f"epoch {nxt['epoch']} after {a.epoch}")
    check_equal(
        (nxt.get("resume_from") or {}).get("version"),
        "step-00000005",
        "OPEN-2.a",
        "resume_from after the refused opens",
    )


@pytest.mark.rule("AUTH-2.a", "AUTH-2.b")
@pytest.mark.parametrize("who", ["read", "scoped"])
def test_forbidden_open_creates_nothing(o41_env: Env, o41_api: Client, who: str) -> None:
    key = o41_env.read_key if who == "read" else o41_env.scoped_key
    if not key:
        pytest.skip(f"optional capability: no {who} key (--read-key / --scoped-key)")
    client = o41_api.with_key(key)
    salt = secrets.token_hex(3)
    src = o41_env.artifact("src")
    commit_ok(o41_api, open_box(o41_api, src, "box-s"), "step-00000001", make_files({"m": 4}))
    targets = [edge_name(o41_env.prefix, "hid", salt)]
    if who == "scoped" and scoped_prefixes(o41_env)[1]:
        targets.append(scoped_name(o41_env, salt, "read"))
    for name in targets:
        for resume in ("latest", None, f"o41://{src}/step-00000001"):
            reply = client.open(name, resume, None, "box-x")
            check(
                (reply.status, reply.code) == (403, "forbidden"),
                "AUTH-2.a",
                f"open of {name} ({resume}) with the {who} key: {reply.brief()}",
            )
            check_equal(
                o41_api.artifact(name).status, 404, "AUTH-2.b", f"{name} after a forbidden open"
            )
    first = expect_ok(o41_api.open(targets[0], "latest", None, "box-w"), "AUTH-2.b", "real open")
    check_equal(first.get("fenced"), None, "AUTH-2.b", "fenced of the first real open")
