"""Epochs and fencing (FENCE-1..4): at most one writer per artifact, whatever the timing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from conformance.actions import Box
from conformance.actions import checkpoint
from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import RuleViolation
from conformance.rules import check
from conformance.rules import check_equal

TINY = {"m": 64}


def _state(api: Client, artifact: str) -> dict:
    return expect_ok(api.artifact(artifact), "READ-1", f"artifacts/read {artifact}")


@pytest.mark.rule("FENCE-1.a")
def test_open_epochs_increase_across_opens(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("epochs")
    places = [*o41_env.topology.locations, None, "lambda/us-south-1"]
    epochs = [open_box(o41_api, name, f"box-{i}", p).epoch for i, p in enumerate(places)]
    check(
        all(a < b for a, b in zip(epochs, epochs[1:], strict=False)),
        "FENCE-1",
        f"epochs of successive opens: {epochs}",
    )
    check_equal(_state(o41_api, name)["epoch"], epochs[-1], "FENCE-1", "artifact epoch")


@pytest.mark.rule("FENCE-1.a", "FENCE-2.d")
def test_open_epochs_distinct_when_racing(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("race")
    n = 6
    barrier = threading.Barrier(n)

    def racer(i: int) -> dict:
        barrier.wait()
        return o41_api.open(name, "latest", None, f"racer-{i}").body or {}

    with ThreadPoolExecutor(max_workers=n) as pool:
        bodies = list(pool.map(racer, range(n)))
    check(
        all(isinstance(b.get("epoch"), int) for b in bodies),
        "FENCE-1",
        f"all racing opens succeed: {bodies}",
    )
    bodies.sort(key=lambda b: b["epoch"])
    epochs = [b["epoch"] for b in bodies]
    check(len(set(epochs)) == n, "FENCE-1", f"racing opens share epochs: {epochs}")
    check_equal(bodies[0].get("fenced"), None, "FENCE-2", "fenced of the first racer")
    for prev, cur in zip(bodies, bodies[1:], strict=False):
        check_equal(
            cur.get("fenced"),
            {"epoch": prev["epoch"], "holder": prev["holder"]},
            "FENCE-2",
            f"whom the open of epoch {cur['epoch']} fenced",
        )
    check_equal(_state(o41_api, name)["epoch"], epochs[-1], "FENCE-1", "epoch after the race")


@pytest.mark.rule("FENCE-2.a", "FENCE-2.d")
def test_write_fenced_after_newer_open(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("fence2")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files(TINY))
    b = open_box(o41_api, name, "box-b", rule="OPEN-2")
    check_equal(
        b.opened.get("fenced"),
        {"epoch": a.epoch, "holder": "box-a"},
        "FENCE-2",
        "the open names whom it fenced",
    )
    reply = checkpoint(o41_api, name, a.token, "step-00000002", make_files(TINY))
    expect_error(reply, 409, "fenced", "FENCE-2", "write by the fenced box A")
    check_equal(_state(o41_api, name)["latest"], "step-00000001", "FENCE-2", "latest")
    commit_ok(o41_api, b, "step-00000002", make_files(TINY), rule="FENCE-2")


@pytest.mark.rule("FENCE-2.b", "FENCE-3.a")
def test_commit_fenced_when_uploaded_before_open(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("fence3")
    a = open_box(o41_api, name, "box-a")
    up = start_upload(o41_api, name, a.token, "step-00000005", make_files(TINY))
    upload = expect_ok(up.write, "VER-4", "write by A")["upload"]
    b = open_box(o41_api, name, "box-b")
    check_equal(b.opened.get("resume_from"), None, "FENCE-3", "resume_from of B")
    expect_error(
        o41_api.commit(name, a.token, upload),
        409,
        "fenced",
        "FENCE-3",
        "commit by A of an upload made before B's open",
    )
    expect_error(
        o41_api.read(name, "step-00000005"),
        404,
        "not_found",
        "FENCE-2",
        "read of the fenced version",
    )
    check_equal(_state(o41_api, name)["latest"], None, "FENCE-3", "latest after the fence")


@pytest.mark.rule("FENCE-2.c")
def test_commit_fenced_when_upload_laundered_by_newer_token(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("launder")
    a = open_box(o41_api, name, "box-a")
    up = start_upload(o41_api, name, a.token, "step-00000005", make_files(TINY))
    upload = expect_ok(up.write, "VER-4", "write by A")["upload"]
    b = open_box(o41_api, name, "box-b")
    expect_error(
        o41_api.commit(name, b.token, upload),
        409,
        "fenced",
        "FENCE-2",
        "commit of A's upload with B's newer token",
    )
    check_equal(_state(o41_api, name)["latest"], None, "FENCE-2", "latest after laundering")


@pytest.mark.rule("FENCE-2.e")
def test_write_and_commit_invalid_when_token_unknown_or_foreign(
    o41_env: Env, o41_api: Client
) -> None:
    name, other = o41_env.artifact("tok"), o41_env.artifact("tok-other")
    a = open_box(o41_api, name, "box-a")
    foreign = open_box(o41_api, other, "box-o")
    up = start_upload(o41_api, name, a.token, "step-00000001", make_files(TINY))
    upload = expect_ok(up.write, "VER-4", "write by A")["upload"]
    specs = [f.as_json() for f in file_specs(make_files(TINY))]
    for token, what in ((foreign.token, "token of another artifact"), ("tk_bogus", "unknown")):
        expect_error(
            o41_api.write(name, token, "step-00000002", specs),
            400,
            "invalid_argument",
            "FENCE-2",
            f"write with a {what} token",
        )
        expect_error(
            o41_api.commit(name, token, upload),
            400,
            "invalid_argument",
            "FENCE-2",
            f"commit with a {what} token",
        )
    check_equal(_state(o41_api, name)["latest"], None, "FENCE-2", "latest after bad tokens")


def _commit_until_fenced(
    api: Client, box: Box, started: threading.Event, opened: threading.Event
) -> list[str]:
    """Box A's loop: commit tiny versions until fenced; at most 5 tries after B's open."""
    done: list[str] = []
    after_open = 0
    for step in range(1, 1000):
        if opened.is_set():
            after_open += 1
            if after_open > 5:
                break
        reply = checkpoint(api, box.artifact, box.token, f"step-{step:08d}", {"m": b"x"})
        if reply.code == "fenced":
            return done
        expect_ok(reply, "FENCE-2", f"commit of step {step} by A")
        done.append(f"step-{step:08d}")
        if len(done) == 2:
            started.set()
    started.set()
    raise RuleViolation("FENCE-2", f"box A still commits after B's open: {done[-5:]}")


@pytest.mark.rule("FENCE-3.a")
def test_open_atomic_with_concurrent_commits(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("atomic")
    a = open_box(o41_api, name, "box-a")
    started, opened = threading.Event(), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        loop = pool.submit(_commit_until_fenced, o41_api, a, started, opened)
        started.wait(timeout=60)
        try:
            b = open_box(o41_api, name, "box-b", rule="OPEN-2")
        finally:
            opened.set()
        committed = loop.result()
    resume = (b.opened.get("resume_from") or {}).get("version")
    listed = [v["version"] for v in expect_ok(o41_api.list(name), "READ-1", "list")["versions"]]
    check_equal(listed, committed, "FENCE-3", "versions visible after A was fenced")
    check_equal(
        resume,
        committed[-1] if committed else None,
        "FENCE-3",
        "B resumed from the last version committed before its open",
    )


@pytest.mark.rule("FENCE-4.a", "OPEN-3.a", "OPEN-3.b")
def test_open_fresh_refused_fences_nobody(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("fence4")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files(TINY))
    expect_error(
        o41_api.open(name, None, None, "box-b"), 409, "has_checkpoints", "OPEN-3", "fresh relaunch"
    )
    check_equal(_state(o41_api, name)["epoch"], a.epoch, "FENCE-4", "epoch after a refusal")
    commit_ok(o41_api, a, "step-00000002", make_files(TINY), rule="FENCE-4")


@pytest.mark.rule("FENCE-4.a", "FORK-1.a", "FORK-1.b", "FORK-1.c")
def test_failed_forks_fence_nobody(o41_env: Env, o41_api: Client) -> None:
    name, src = o41_env.artifact("fence4f"), o41_env.artifact("fence4s")
    s = open_box(o41_api, src, "box-s")
    commit_ok(o41_api, s, "step-00000009", make_files(TINY))
    a = open_box(o41_api, name, "box-a")
    refused = [
        (f"o41://{src}/step-00000008", 404, "not_found"),
        (f"o41://{src}/latest", 400, "invalid_argument"),
        (f"o41://{src}/step-00000009", 409, "not_empty"),
    ]
    for step, (resume, status, code) in enumerate(refused, start=1):
        expect_error(
            o41_api.open(name, resume, None, "box-f"), status, code, "FORK-1", f"fork from {resume}"
        )
        check_equal(_state(o41_api, name)["epoch"], a.epoch, "FENCE-4", "epoch after refusal")
        commit_ok(o41_api, a, f"step-{step:08d}", make_files(TINY), rule="FENCE-4")
    check_equal(_state(o41_api, src)["epoch"], s.epoch, "FENCE-4", "source epoch")
