"""Opens wrong in two ways get the earlier error: a 400 before a 404 and a 404 before a 409
(docs/contract.md, "Small points"). Each open below is wrong in two ways, each of which
alone gets its own error elsewhere in the suite; an implementation that looks the fork
source or the target's versions up before it checks the body, or the target before the
source, answers the later one. Every refusal changes nothing on either artifact."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.client import Client
from conformance.env import Env
from conformance.probes import Snapshot
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot
from conformance.rules import check

V1, V2 = "step-00000001", "step-00000002"

#: Mistyped open fields other than ``artifact`` and ``resume`` (each alone is a 400).
BAD_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("string place", {"place": "aws/us-east-1"}),
    ("place without region", {"place": {"cloud": "aws"}}),
    ("number holder", {"holder": 7}),
]


def _open(api: Client, artifact: str, resume: Any, **fields: Any) -> Any:
    body = {"artifact": artifact, "resume": resume, "place": None, "holder": "box-x", **fields}
    return api.call("POST", "/artifacts/open", body=body)


def _unchanged_and_alive(api: Client, before: dict[str, Snapshot], writers: tuple[Box, ...],
                         clause: str, refused: str) -> None:
    """After ``refused`` requests: every artifact as ``before``, then each writer still
    able to commit V2."""
    for artifact, was in before.items():
        expect_unchanged(api, artifact, was, clause, f"the {refused}")
    for box in writers:
        expect_writer_alive(api, box, V2, clause, f"after the {refused}")


@pytest.mark.rule("API-1.f", "FORK-1.b")
def test_an_open_with_a_mistyped_field_is_invalid_before_a_missing_source_or_checkpoints(
    o41_env: Env, o41_api: Client
) -> None:
    """A fork from a missing source, a fork into an artifact with versions, a fresh open of
    an artifact with versions: each with a mistyped place or holder gets 400, not the 404 or
    409 it would get with a well-formed body."""
    src = open_box(o41_api, o41_env.artifact("two-ways-src"), "box-s")
    commit_ok(o41_api, src, V1, make_files({"m": 12}, 91), "FORK-1.b")
    full = open_box(o41_api, o41_env.artifact("two-ways-full"), "box-f")
    commit_ok(o41_api, full, V1, make_files({"m": 12}, 92), "FORK-1.b")
    new = o41_env.artifact("two-ways-new")
    before = {a: snapshot(o41_api, a) for a in (src.artifact, full.artifact, new)}
    missing = f"o41://{src.artifact}/step-00000009"
    cases = [(new, missing, "a fork from a missing source"),
             (full.artifact, f"o41://{src.artifact}/{V1}", "a fork into versions"),
             (full.artifact, None, "a fresh open of versions")]
    for artifact, resume, what in cases:
        for fault, fields in BAD_FIELDS:
            expect_error(_open(o41_api, artifact, resume, **fields), 400, "invalid_argument",
                         "API-1.f", f"{what} with a {fault}")
    _unchanged_and_alive(o41_api, before, (full, src), "API-1.f", "refused opens")


@pytest.mark.rule("FORK-1.b", "FORK-1.c")
def test_a_fork_from_a_missing_or_malformed_source_into_versions_is_404_or_400(
    o41_env: Env, o41_api: Client
) -> None:
    """A fork into an artifact with versions is 409 ``not_empty`` only when its source is
    well formed and exists: from a missing source it is 404, from a malformed one 400."""
    src = open_box(o41_api, o41_env.artifact("two-ways-fsrc"), "box-s")
    commit_ok(o41_api, src, V1, make_files({"m": 12}, 93), "FORK-1.b")
    full = open_box(o41_api, o41_env.artifact("two-ways-ffull"), "box-f")
    commit_ok(o41_api, full, V1, make_files({"m": 12}, 94), "FORK-1.b")
    before = {a: snapshot(o41_api, a) for a in (src.artifact, full.artifact)}
    for resume in (f"o41://{src.artifact}/step-00000009",
                   f"o41://{o41_env.artifact('two-ways-none')}/{V1}"):
        expect_error(_open(o41_api, full.artifact, resume), 404, "not_found", "FORK-1.b",
                     f"a fork from {resume} into an artifact with versions")
    for resume in (f"o41://{src.artifact}/step-1", f"o41://{src.artifact}/latest",
                   f"o41://{src.artifact}"):
        expect_error(_open(o41_api, full.artifact, resume), 400, "invalid_argument",
                     "FORK-1.c", f"a fork from {resume} into an artifact with versions")
    _unchanged_and_alive(o41_api, before, (full,), "FORK-1.b", "refused forks")


@pytest.mark.rule("AUTH-2.c", "AUTH-2.b")
@pytest.mark.read_key
def test_an_open_by_a_key_that_cannot_write_is_forbidden_before_a_mistyped_field(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    """The key comes before the body: a read-only key's open with a mistyped place or holder
    gets 403, of an artifact with versions and of a new one alike."""
    held = open_box(o41_api, o41_env.artifact("two-ways-held"), "box-h")
    commit_ok(o41_api, held, V1, make_files({"m": 12}, 95), "AUTH-2.c")
    new = o41_env.artifact("two-ways-unwritten")
    before = {a: snapshot(o41_api, a) for a in (held.artifact, new)}
    for artifact in (held.artifact, new):
        for resume in ("latest", None):
            for fault, fields in BAD_FIELDS:
                expect_error(_open(o41_reader, artifact, resume, **fields), 403, "forbidden",
                             "AUTH-2.c", f"open of {artifact} ({resume}) with a {fault}, "
                             "by a read-only key")
    _unchanged_and_alive(o41_api, before, (held,), "AUTH-2.b", "refused opens")


@pytest.mark.rule("API-1.f", "OPEN-3.b")
def test_an_open_without_resume_never_resumes_a_checkpoint(
    o41_env: Env, o41_api: Client
) -> None:
    """The open body's ``resume`` is not optional (only ``holder`` is): an open that leaves
    it out, of an artifact with checkpoints, is refused (400 for the missing field, or 409
    ``has_checkpoints`` where it is read as a fresh start), never a resume, and changes
    nothing."""
    a = open_box(o41_api, o41_env.artifact("no-resume"), "box-a")
    commit_ok(o41_api, a, V1, make_files({"m": 12}, 96), "API-1.f")
    before = snapshot(o41_api, a.artifact)
    reply = o41_api.call("POST", "/artifacts/open", body={
        "artifact": a.artifact, "place": None, "holder": "box-n"})
    check((reply.status, reply.code) in ((400, "invalid_argument"), (409, "has_checkpoints")),
          "API-1.f", f"an open without resume of an artifact with checkpoints: {reply.brief()}")
    expect_unchanged(o41_api, a.artifact, before, "API-1.f", "the open without resume")
    expect_writer_alive(o41_api, a, V2, "API-1.f", "after the open without resume")
