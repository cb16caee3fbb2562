"""Opens where shallow tests do not look: names of every allowed spelling, relaunches of an
empty artifact, artifacts with three or more versions and files, repeated refusals. Each test
here killed a mutant of ``conformance.mutants`` that the rest of the suite missed."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check_equal

THREE = {"model.bin": 300, "optim/state.bin": 200, "meta.json": 40}


@pytest.mark.rule("OPEN-1.a")
@pytest.mark.parametrize("spelling", ["run.v2", "run_v2", "Run-2", "r.u_n-3", "9run", "r..n",
                                      "run.", "R_"])
def test_latest_creates_artifacts_of_every_name_spelling(
    o41_env: Env, o41_api: Client, spelling: str
) -> None:
    """OPEN-1.a: names may hold letters, digits, '.', '_' and '-' anywhere after a first
    letter or digit (API-1.h refuses a part starting with '.', '_' or '-')."""
    name = f"{o41_env.prefix}/{spelling}-{secrets.token_hex(3)}"
    body = expect_ok(o41_api.open(name, "latest", None, "box-a"), "OPEN-1", f"open {name}")
    check_equal(body.get("resume_from"), None, "OPEN-1", "resume_from of a new artifact")
    expect_ok(o41_api.artifact(name), "OPEN-1", "artifacts/read after the open")


@pytest.mark.rule("OPEN-1.a")
def test_latest_relaunch_of_empty_artifact_resumes_nothing(o41_env: Env, o41_api: Client) -> None:
    """OPEN-1.a: the second and third latest open of an artifact with no versions succeed."""
    name = o41_env.artifact("empty-relaunch")
    for box in ("box-a", "box-b", "box-c"):
        body = expect_ok(o41_api.open(name, "latest", None, box), "OPEN-1", f"open by {box}")
        check_equal(body.get("resume_from"), None, "OPEN-1", f"resume_from for {box}")


def _four_versions(env: Env, api: Client, slug: str) -> tuple[str, dict[str, bytes]]:
    name = env.artifact(slug)
    box = open_box(api, name, "box-a")
    for step in (1, 2, 3):
        commit_ok(api, box, f"step-{step:08d}", make_files(THREE, seed=step))
    last = make_files(THREE, seed=4)
    commit_ok(api, box, "step-00000004", last)
    return name, last


@pytest.mark.rule("OPEN-2.a")
def test_latest_of_many_versions_and_files_resumes_the_last_whole(
    o41_env: Env, o41_api: Client
) -> None:
    """OPEN-2.a/b: four versions of three files (same names, other bytes): the relaunch
    resumes the highest step, every file, and each URL serves that version's bytes."""
    name, last = _four_versions(o41_env, o41_api, "many")
    body = expect_ok(o41_api.open(name, "latest", None, "box-b"), "OPEN-2", "relaunch")
    resume = body.get("resume_from") or {}
    check_equal(resume.get("version"), "step-00000004", "OPEN-2", "resume_from.version")
    check_equal(sorted(f["name"] for f in resume.get("files", [])), sorted(last), "OPEN-2",
                "resume_from files")
    check_equal(download(o41_api, resume), last, "OPEN-2", "bytes of resume_from")


@pytest.mark.rule("OPEN-3.a")
@pytest.mark.parametrize("count", [1, 2, 3])
def test_fresh_refused_whatever_the_number_of_versions(
    o41_env: Env, o41_api: Client, count: int
) -> None:
    """OPEN-3.a: one version or three, a fresh open is 409 has_checkpoints."""
    name = o41_env.artifact(f"fresh-{count}")
    box = open_box(o41_api, name, "box-a")
    for step in range(1, count + 1):
        commit_ok(o41_api, box, f"step-{step:08d}", make_files({"m": 8}, seed=step))
    expect_error(o41_api.open(name, None, None, "box-b"), 409, "has_checkpoints", "OPEN-3",
                 f"fresh open with {count} versions")


@pytest.mark.rule("OPEN-3.b")
def test_repeated_fresh_refusals_change_nothing(o41_env: Env, o41_api: Client) -> None:
    """OPEN-3.b: three refused fresh opens later, epoch and holder stay, the holder commits."""
    name = o41_env.artifact("fresh-again")
    box = open_box(o41_api, name, o41_env.holder("box-a"))
    commit_ok(o41_api, box, "step-00000001", make_files({"m": 8}))
    before = expect_ok(o41_api.artifact(name), "OPEN-3", "artifacts/read")
    for i in range(3):
        expect_error(o41_api.open(name, None, None, f"box-{i}"), 409, "has_checkpoints",
                     "OPEN-3", f"fresh open {i}")
    after = expect_ok(o41_api.artifact(name), "OPEN-3", "artifacts/read")
    check_equal((after["epoch"], after["holder"]), (before["epoch"], before["holder"]),
                "OPEN-3", "epoch and holder after the refusals")
    commit_ok(o41_api, box, "step-00000002", make_files({"m": 8}, seed=2), rule="OPEN-3")


@pytest.mark.rule("OPEN-3.c")
def test_fresh_reopen_of_empty_and_of_empty_fork_succeeds(o41_env: Env, o41_api: Client) -> None:
    """OPEN-3.c: an artifact opened before but still empty, plain or made by a fork."""
    name = o41_env.artifact("fresh-empty")
    for box in ("box-a", "box-b"):
        body = expect_ok(o41_api.open(name, "latest", None, box), "OPEN-3", f"open by {box}")
    body = expect_ok(o41_api.open(name, None, None, "box-c"), "OPEN-3", "fresh reopen")
    check_equal(body.get("resume_from"), None, "OPEN-3", "resume_from of the fresh reopen")
    src, dst = o41_env.artifact("fresh-src"), o41_env.artifact("fresh-fork")
    commit_ok(o41_api, open_box(o41_api, src, "box-s"), "step-00000001", make_files({"m": 8}))
    open_box(o41_api, dst, "box-f", resume=f"o41://{src}/step-00000001", rule="OPEN-3")
    body = expect_ok(o41_api.open(dst, None, None, "box-g"), "OPEN-3", "fresh open of the fork")
    check_equal(body.get("resume_from"), None, "OPEN-3", "resume_from of the empty fork")
