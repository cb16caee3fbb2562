"""Opening an artifact: resume latest, fresh starts and forks (OPEN-1..3, FORK-1..2)."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_fork_forbidden
from conformance.rules import check
from conformance.rules import check_equal

FILES = {"model.pt": 3000, "optim/state.bin": 700}


def _state(api: Client, artifact: str) -> dict:
    return expect_ok(api.artifact(artifact), "READ-1", f"artifacts/read {artifact}")


def _fork_refused(env: Env, api: Client, slug: str, resume: str, refusal: tuple[int, str],
                  what: str) -> None:
    """FORK-1: box-f's open of a new artifact resuming ``resume`` is refused so."""
    status, code = refusal
    expect_error(api.open(env.artifact(slug), resume, None, "box-f"), status, code, "FORK-1",
                 what)


@pytest.mark.rule("OPEN-1.a", "FENCE-2.d")
def test_open_latest_creates_artifact_when_missing(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("open1")
    body = expect_ok(o41_api.open(name, "latest", None, "box-a"), "OPEN-1", "first open")
    check_equal(body.get("resume_from"), None, "OPEN-1", "resume_from of a first open")
    check_equal(body.get("fenced"), None, "OPEN-1", "fenced of a first open")
    check_equal(body.get("artifact"), name, "OPEN-1", "artifact echoed")
    check_equal(body.get("holder"), "box-a", "OPEN-1", "holder echoed")
    state = _state(o41_api, name)
    check_equal(state.get("latest"), None, "OPEN-1", "latest of the created artifact")
    check_equal(state.get("versions"), 0, "OPEN-1", "version count of the created artifact")
    check_equal(state.get("epoch"), body["epoch"], "OPEN-1", "epoch of the created artifact")


@pytest.mark.rule("OPEN-1.a")
def test_open_latest_resumes_nothing_when_no_versions(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("open1b")
    open_box(o41_api, name, "box-a")
    second = o41_api.open(name, "latest", None, "box-b")
    body = expect_ok(second, "OPEN-1", "second open of an artifact without versions")
    check_equal(body.get("resume_from"), None, "OPEN-1", "resume_from without versions")


@pytest.mark.rule("OPEN-1.a")
def test_open_holder_defaults_when_omitted(o41_env: Env, o41_api: Client) -> None:
    body = expect_ok(o41_api.open(o41_env.artifact("holderless")), "OPEN-1", "open, no holder")
    check(
        isinstance(body.get("holder"), str) and body["holder"],
        "OPEN-1",
        f"a default holder is made up, got {body.get('holder')!r}",
    )


@pytest.mark.rule("OPEN-2.a", "OPEN-2.b")
def test_open_latest_returns_latest_signed_when_versions(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("open2")
    a = open_box(o41_api, name, "box-a", o41_env.topology.locations[0])
    commit_ok(o41_api, a, "step-00000100", make_files(FILES, 1))
    files = make_files(FILES, 2)
    commit_ok(o41_api, a, "step-00000200", files)
    body = expect_ok(o41_api.open(name, "latest", None, "box-b"), "OPEN-2", "relaunch")
    resume = body.get("resume_from") or {}
    check_equal(resume.get("version"), "step-00000200", "OPEN-2", "resume_from.version")
    check_equal(resume.get("step"), 200, "OPEN-2", "resume_from.step")
    check(all(f.get("url") for f in resume.get("files", [])), "OPEN-2", "resume_from unsigned")
    check_equal(download(o41_api, resume), files, "OPEN-2", "bytes of resume_from")


@pytest.mark.rule("OPEN-3.a", "OPEN-3.b")
def test_open_fresh_refused_when_checkpoints(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("open3")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 10}))
    before = _state(o41_api, name)
    expect_error(
        o41_api.open(name, None, None, "box-b"),
        409,
        "has_checkpoints",
        "OPEN-3",
        "fresh open of an artifact with a checkpoint",
    )
    after = _state(o41_api, name)
    check_equal(
        (after["epoch"], after["holder"]),
        (before["epoch"], before["holder"]),
        "OPEN-3",
        "epoch and holder after a refused fresh open",
    )


@pytest.mark.rule("OPEN-3.c", "FENCE-1.a")
def test_open_fresh_succeeds_when_no_versions(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("open3b")
    first = expect_ok(o41_api.open(name, None, None, "box-a"), "OPEN-3", "fresh open, new")
    check_equal(first.get("resume_from"), None, "OPEN-3", "resume_from of a fresh open")
    again = expect_ok(o41_api.open(name, None, None, "box-b"), "OPEN-3", "fresh open, empty")
    check(again["epoch"] > first["epoch"], "FENCE-1", "second fresh open did not bump epoch")


@pytest.mark.rule("FORK-1.a")
def test_fork_refused_when_target_not_empty(o41_env: Env, o41_api: Client) -> None:
    src, dst = o41_env.artifact("fork-src"), o41_env.artifact("fork-dst")
    s = open_box(o41_api, src, "box-s")
    commit_ok(o41_api, s, "step-00000010", make_files({"m": 10}))
    d = open_box(o41_api, dst, "box-d")
    commit_ok(o41_api, d, "step-00000001", make_files({"m": 5}))
    before = _state(o41_api, dst)
    expect_error(
        o41_api.open(dst, f"o41://{src}/step-00000010", None, "box-f"),
        409,
        "not_empty",
        "FORK-1",
        "fork into an artifact with versions",
    )
    after = _state(o41_api, dst)
    check_equal(
        (after["epoch"], after["latest"]),
        (before["epoch"], before["latest"]),
        "FORK-1",
        "target after a refused fork",
    )


@pytest.mark.rule("FORK-1.b")
def test_fork_not_found_when_source_missing(o41_env: Env, o41_api: Client) -> None:
    src = o41_env.artifact("fork-src")
    s = open_box(o41_api, src, "box-s")
    commit_ok(o41_api, s, "step-00000010", make_files({"m": 10}))
    missing_version = f"o41://{src}/step-00000011"
    missing_artifact = f"o41://{o41_env.artifact('nothing')}/step-00000010"
    for resume in (missing_version, missing_artifact):
        _fork_refused(o41_env, o41_api, "fork-dst", resume, (404, "not_found"),
                      f"fork from {resume}")


@pytest.mark.rule("FORK-1.c")
@pytest.mark.parametrize(
    "resume",
    [
        "o41://{p}/step-00000010",
        "o41://{p}/src/step-10",
        "o41://{p}/src/v10",
        "s3://{p}/src/step-00000010",
        "o41://{p}/src/x/step-00000010",
        "earliest",
        "",
    ],
)
def test_open_invalid_when_resume_malformed(o41_env: Env, o41_api: Client, resume: str) -> None:
    resume = resume.format(p=o41_env.prefix)
    _fork_refused(o41_env, o41_api, "fork-bad", resume, (400, "invalid_argument"),
                  f"open with resume {resume!r}")


@pytest.mark.rule("FORK-1.d")
@pytest.mark.scoped_key
@pytest.mark.scoped_read
def test_fork_needs_read_on_source_and_write_on_target(o41_env: Env, o41_api: Client) -> None:
    scoped = o41_env.client(key=o41_env.scoped_key, trail=o41_api.trail)
    readable, hidden = o41_env.scoped_artifact("src", "read"), o41_env.artifact("x-src")
    for name in (readable, hidden):
        commit_ok(o41_api, open_box(o41_api, name, "box-s"), "step-00000001", make_files({"m": 4}))
    expect_ok(
        scoped.open(o41_env.scoped_artifact("dst"), f"o41://{readable}/step-00000001"),
        "FORK-1",
        "fork from a readable source into a writable artifact",
    )
    expect_fork_forbidden(scoped, o41_env.scoped_artifact("dst"), hidden, "FORK-1",
                          "fork from a source the key cannot read")
    expect_fork_forbidden(scoped, o41_env.scoped_artifact("dst", "read"), readable, "FORK-1",
                          "fork into an artifact the key cannot write")


@pytest.mark.rule("FORK-2.a", "FORK-2.b", "FORK-2.c")
def test_fork_returns_source_version_and_leaves_source(o41_env: Env, o41_api: Client) -> None:
    src, dst = o41_env.artifact("fork2-src"), o41_env.artifact("fork2-dst")
    s = open_box(o41_api, src, "box-s", o41_env.topology.locations[0])
    mid = make_files(FILES, 20)
    for step, files in ((100, make_files(FILES, 10)), (200, mid), (300, make_files(FILES, 30))):
        commit_ok(o41_api, s, f"step-{step:08d}", files)
    before = _state(o41_api, src)
    body = expect_ok(
        o41_api.open(dst, f"o41://{src}/step-00000200", None, "box-f"),
        "FORK-2",
        "fork from a mid-run checkpoint",
    )
    resume = body.get("resume_from") or {}
    check_equal(
        (resume.get("artifact"), resume.get("version")),
        (src, "step-00000200"),
        "FORK-2",
        "resume_from of the fork",
    )
    check_equal(download(o41_api, resume), mid, "FORK-2", "bytes of the forked version")
    check_equal(body.get("fenced"), None, "FORK-2", "a fork into a new artifact fenced")
    state = _state(o41_api, dst)
    check_equal(
        state.get("forked_from"),
        {"artifact": src, "version": "step-00000200"},
        "FORK-2",
        "forked_from of the new artifact",
    )
    after = _state(o41_api, src)
    check_equal(
        (after["epoch"], after["holder"], after["latest"]),
        (before["epoch"], before["holder"], before["latest"]),
        "FORK-2",
        "source artifact after the fork",
    )
    commit_ok(o41_api, s, "step-00000400", make_files(FILES, 40), rule="FORK-2")
