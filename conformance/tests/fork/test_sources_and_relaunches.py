"""Forks where shallow tests do not look: a source with several versions, malformed sources
that name something real once padded, relaunches of the fork, repeated forks of one source.
Each test here killed a mutant of ``conformance.mutants`` that the rest of the suite missed."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_fork_forbidden
from conformance.rules import check
from conformance.rules import check_equal
from conformance.tests.auth.test_scopes_on_held_artifacts import _scoped

FILES = {"model.bin": 200, "meta.json": 30}


def _source(env: Env, api: Client, steps: int = 3) -> tuple[str, Box, dict[int, dict[str, bytes]]]:
    name = env.artifact("fork-src")
    box = open_box(api, name, env.holder("src"))
    data = {}
    for step in range(1, steps + 1):
        data[step] = make_files(FILES, seed=step)
        commit_ok(api, box, f"step-{step:08d}", data[step])
    return name, box, data


def _state(api: Client, name: str, rule: str) -> tuple[int, str, str | None]:
    body = expect_ok(api.artifact(name), rule, f"artifacts/read {name}")
    return body["epoch"], body["holder"], body.get("latest")


@pytest.mark.rule("FORK-1.a")
def test_fork_into_nonempty_changes_neither_artifact(o41_env: Env, o41_api: Client) -> None:
    """FORK-1.a: 409 not_empty; both epochs and holders stay; the target's holder commits."""
    src, _, _ = _source(o41_env, o41_api, 1)
    dst = o41_env.artifact("fork-full")
    owner = open_box(o41_api, dst, o41_env.holder("dst"))
    commit_ok(o41_api, owner, "step-00000005", make_files({"m": 8}))
    before = _state(o41_api, dst, "FORK-1"), _state(o41_api, src, "FORK-1")
    expect_error(o41_api.open(dst, f"o41://{src}/step-00000001", None, "forker"), 409,
                 "not_empty", "FORK-1", "fork into an artifact with a version")
    after = _state(o41_api, dst, "FORK-1"), _state(o41_api, src, "FORK-1")
    check_equal(after, before, "FORK-1", "(target, source) epoch, holder, latest")
    commit_ok(o41_api, owner, "step-00000006", make_files({"m": 8}, seed=1), rule="FORK-1")


@pytest.mark.rule("FORK-1.b")
def test_fork_from_missing_version_or_artifact_is_not_found(o41_env: Env, o41_api: Client) -> None:
    """FORK-1.b: a missing version of an existing source, and a missing source, are 404 and
    create nothing."""
    src, _, _ = _source(o41_env, o41_api, 1)
    ghost = f"{o41_env.prefix}/ghost-{secrets.token_hex(3)}"
    for resume in (f"o41://{src}/step-00000099", f"o41://{ghost}/step-00000001"):
        dst = o41_env.artifact("fork-404")
        expect_error(o41_api.open(dst, resume, None, "forker"), 404, "not_found", "FORK-1",
                     f"fork from {resume}")
        expect_error(o41_api.artifact(dst), 404, "not_found", "FORK-1", "target after it")


@pytest.mark.rule("FORK-1.c")
def test_fork_from_malformed_source_of_a_real_artifact(o41_env: Env, o41_api: Client) -> None:
    """FORK-1.c: sources that would name a real version if read leniently are still 400."""
    src, _, _ = _source(o41_env, o41_api, 1)
    for resume in (f"o41://{src}", f"o41://{src}/", f"o41://{src}/step-1",
                   f"o41://{src}/step-0000001"):
        dst = o41_env.artifact("fork-400")
        expect_error(o41_api.open(dst, resume, None, "forker"), 400, "invalid_argument",
                     "FORK-1", f"fork from {resume!r}")


@pytest.mark.rule("FORK-2.a")
def test_fork_from_a_middle_version_resumes_that_version(o41_env: Env, o41_api: Client) -> None:
    """FORK-2.a: the named version, not the source's latest, with URLs serving its bytes."""
    src, _, data = _source(o41_env, o41_api, 3)
    dst = o41_env.artifact("fork-mid")
    fork = open_box(o41_api, dst, "forker", resume=f"o41://{src}/step-00000002", rule="FORK-2")
    resume = fork.opened.get("resume_from") or {}
    check_equal(resume.get("version"), "step-00000002", "FORK-2", "resume_from.version")
    check(all(f.get("url") for f in resume.get("files", [])), "FORK-2", "files without URLs")
    check_equal(download(o41_api, resume), data[2], "FORK-2", "bytes of the forked version")


@pytest.mark.rule("FORK-2.b")
def test_forked_from_survives_relaunches_and_newer_source_versions(
    o41_env: Env, o41_api: Client
) -> None:
    """FORK-2.b: forked_from keeps naming the forked version after the fork is opened again
    and after the source committed more."""
    src, src_box, _ = _source(o41_env, o41_api, 2)
    dst = o41_env.artifact("fork-ff")
    open_box(o41_api, dst, "forker", resume=f"o41://{src}/step-00000001", rule="FORK-2")
    commit_ok(o41_api, src_box, "step-00000003", make_files(FILES, seed=9), rule="FORK-2")
    open_box(o41_api, dst, "forker-relaunch", rule="FORK-2")
    body = expect_ok(o41_api.artifact(dst), "FORK-2", "artifacts/read of the fork")
    check_equal(body.get("forked_from"), {"artifact": src, "version": "step-00000001"},
                "FORK-2", "forked_from")


@pytest.mark.rule("FORK-2.c")
def test_repeated_forks_leave_the_source_writing(o41_env: Env, o41_api: Client) -> None:
    """FORK-2.c: after two forks the source's epoch and holder stay and it commits on."""
    src, src_box, _ = _source(o41_env, o41_api, 2)
    before = _state(o41_api, src, "FORK-2")
    for i in range(2):
        open_box(o41_api, o41_env.artifact(f"fork-{i}"), f"forker-{i}",
                 resume=f"o41://{src}/step-00000002", rule="FORK-2")
    after = _state(o41_api, src, "FORK-2")
    check_equal(after, before, "FORK-2", "source epoch, holder, latest after two forks")
    commit_ok(o41_api, src_box, "step-00000003", make_files(FILES, seed=7), rule="FORK-2")


@pytest.mark.rule("FORK-2.c")
def test_a_fork_leaves_the_sources_upload_in_flight_committable(
    o41_env: Env, o41_api: Client
) -> None:
    """FORK-2.c: the source's holder had an upload fully PUT when the fork happened; the
    fork reads a committed version and fences nobody, so that upload still commits and
    becomes the source's latest."""
    src, src_box, _ = _source(o41_env, o41_api, 1)
    files = make_files(FILES, seed=11)
    staged = start_upload(o41_api, src, src_box.token, "step-00000002", files)
    upload = str(expect_ok(staged.write, "FORK-2", "the source's write")["upload"])
    open_box(o41_api, o41_env.artifact("fork-inflight"), "forker",
             resume=f"o41://{src}/step-00000001", rule="FORK-2")
    version = expect_ok(o41_api.commit(src, src_box.token, upload), "FORK-2.c",
                        "the source's commit of an upload started before the fork")
    check_equal(version.get("version"), "step-00000002", "FORK-2.c", "the committed version")
    check_equal(_state(o41_api, src, "FORK-2")[2], "step-00000002", "FORK-2.c",
                "the source's latest after the fork and the commit")


@pytest.mark.rule("FORK-1.d")
@pytest.mark.scoped_key
def test_fork_from_unreadable_source_is_forbidden(o41_env: Env, o41_api: Client) -> None:
    """FORK-1.d: a key that can write the target but not read the source gets 403 (not 404,
    not a fork made with someone else's rights), and the target stays as it was."""
    key, dst = _scoped(o41_env, "fork-dst")
    src, _, _ = _source(o41_env, o41_api, 1)
    scoped = o41_api.with_key(key)
    open_box(scoped, dst, "scoped-box", rule="FORK-1")
    before = _state(scoped, dst, "FORK-1")
    expect_fork_forbidden(scoped, dst, src, "FORK-1", "fork from a source the key cannot read",
                          "scoped-fork")
    check_equal(_state(scoped, dst, "FORK-1"), before, "FORK-1", "target after the refusal")
