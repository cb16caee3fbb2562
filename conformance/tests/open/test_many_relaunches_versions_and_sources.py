"""Opens and forks at their edges (OPEN-1..3, FORK-1..2): several relaunches in a row,
artifacts with three or more versions, forks from the first, a middle and the last
version, names using every allowed character, sources that almost exist."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import open_raw
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.names import edge_name
from conformance.names import scoped_name
from conformance.probes import expect_fork_forbidden
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot
from conformance.rules import check_equal

FILES = {"model.pt": 2048, "shards/rank-1/optim.bin": 300, "empty": 0}


def _name(env: Env, slug: str) -> str:
    return edge_name(env.prefix, slug, secrets.token_hex(3))


def _check_resume(api: Client, body: dict, version: dict, files: dict, clause: str) -> None:
    """resume_from is exactly the committed ``version`` (as its commit answered), signed."""
    got = body.get("resume_from") or {}
    check_equal(
        (got.get("artifact"), got.get("version"), got.get("step")),
        (version["artifact"], version["version"], version["step"]),
        clause,
        "resume_from name and step",
    )
    check_equal(got.get("location"), version.get("location"), clause, "resume_from location")
    check_equal(
        sorted((f["name"], f["size"], f["sha256"]) for f in got.get("files", [])),
        sorted((f["name"], f["size"], f["sha256"]) for f in version["files"]),
        clause,
        "resume_from files, sizes and sha256",
    )
    check_equal(download(api, got), files, "OPEN-2.b", f"bytes of resume_from {got['version']}")


@pytest.mark.rule("OPEN-1.a", "OPEN-3.c")
def test_open_empty_artifact_again_and_again(o41_env: Env, o41_api: Client) -> None:
    name = _name(o41_env, "empty")
    opens = [
        ("latest", {"cloud": "GCP", "region": "europe-west4"}),
        ("latest", None),
        (None, {"cloud": "aws", "region": "us-east-1"}),
        ("latest", {"cloud": "Azure", "region": "westeurope"}),
        (None, None),
    ]
    for i, (resume, place) in enumerate(opens, start=1):
        clause = "OPEN-3.c" if resume is None else "OPEN-1.a"
        body = expect_ok(open_raw(o41_api, name, resume, place, f"b{i}"), clause, f"open {i}")
        check_equal(body.get("resume_from"), None, clause, f"resume_from of open {i}")
        state = expect_ok(o41_api.artifact(name), "OPEN-1.a", "the artifact exists")
        check_equal(
            (state.get("latest"), state.get("versions"), state.get("epoch")),
            (None, 0, body["epoch"]),
            clause,
            f"artifact after open {i}",
        )
        check_equal(
            expect_ok(o41_api.list(name), "OPEN-1.a", "list")["versions"], [], clause, "list"
        )
        if i == 2:  # staged and cut uploads do not make it non-empty
            box = open_box(o41_api, name, f"stager-{i}")
            start_upload(o41_api, name, box.token, "step-00000001", make_files(FILES), put=False)
            start_upload(o41_api, name, box.token, "step-00000002", make_files(FILES))


@pytest.mark.rule("OPEN-2.a", "OPEN-2.b", "READ-1.a")
def test_every_relaunch_resumes_the_highest_committed_step(o41_env: Env, o41_api: Client) -> None:
    name = _name(o41_env, "relaunch")
    a = open_box(o41_api, name, "box-a", "aws/us-east-1")
    committed = {}
    for step in (0, 9, 10, 200):
        files = make_files(FILES, step)
        committed[step] = (commit_ok(o41_api, a, f"step-{step:08d}", files), files)
    places = ["gcp/europe-west4", "azure/westeurope", "aws/us-west-2", "AWS/us-east-1"]
    top = 200
    for i, place in enumerate(places):
        body = expect_ok(
            open_raw(o41_api, name, "latest", Place.parse(place).as_json(), f"r{i}"),
            "OPEN-2.a",
            f"relaunch {i + 1} at {place}",
        )
        _check_resume(o41_api, body, *committed[top], "OPEN-2.a")
        box = open_box(o41_api, name, f"w{i}", place, rule="OPEN-2.a")
        _check_resume(o41_api, box.opened, *committed[top], "OPEN-2.a")
        if i % 2 == 1:  # a new box commits; the next relaunch must resume its version
            top += 1
            files = make_files(FILES, top)
            committed[top] = (commit_ok(o41_api, box, f"step-{top:08d}", files), files)


@pytest.mark.rule("OPEN-3.a")
@pytest.mark.parametrize("steps", [(0,), (5, 6, 7)], ids=["only-step-0", "three-versions"])
def test_fresh_open_refused_whatever_the_versions(
    o41_env: Env, o41_api: Client, steps: tuple[int, ...]
) -> None:
    name = _name(o41_env, "fresh")
    a = open_box(o41_api, name, "box-a")
    for step in steps:
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 4}, step))
    b = open_box(o41_api, name, "box-b", "azure/westeurope", rule="OPEN-2.a")
    for place in (None, {"cloud": "GCP", "region": "europe-west4"}):
        expect_error(
            open_raw(o41_api, name, None, place, "box-c"),
            409,
            "has_checkpoints",
            "OPEN-3.a",
            f"fresh open from {place} of an artifact with versions {steps}",
        )
    expect_writer_alive(o41_api, b, "step-00000100", "OPEN-3.b", "holder after fresh refusals")


@pytest.mark.rule("FORK-1.b")
def test_fork_from_versions_that_almost_exist_not_found(o41_env: Env, o41_api: Client) -> None:
    src = _name(o41_env, "src")
    s = open_box(o41_api, src, "box-s")
    for step in (10, 20, 30):
        commit_ok(o41_api, s, f"step-{step:08d}", make_files({"m": 4}, step))
    start_upload(o41_api, src, s.token, "step-00000040", make_files({"m": 4}))
    sources = [f"o41://{src}/step-{n:08d}" for n in (15, 9, 31, 40, 0)]
    upper = src.split("/")[0] + "/" + src.split("/")[1].upper()
    sources += [f"o41://{upper}/step-00000010", f"o41://{src}x/step-00000010"]
    for resume in sources:
        target = _name(o41_env, "dst")
        expect_error(
            o41_api.open(target, resume, None, "box-f"), 404, "not_found", "FORK-1.b", resume
        )
        check_equal(o41_api.artifact(target).status, 404, "FORK-1.b", f"target after {resume}")


@pytest.mark.rule("FORK-1.c")
@pytest.mark.parametrize(
    "form",
    [
        "o41://{src}/step-0000001",
        "o41://{src}/step-000000010",
        "o41://{src}/Step-00000010",
        "o41://{src}/step-0000001\u0660",
        "O41://{src}/step-00000010",
        "o41:/{src}/step-00000010",
        "o41://{src}/step-00000010/",
        "o41://{src}//step-00000010",
        "o41://{src}",
        "o41://{proj}/step-00000010",
        "{src}/step-00000010",
        "o41://{src}/latest",
        " o41://{src}/step-00000010",
    ],
)
def test_fork_malformed_source_invalid(o41_env: Env, o41_api: Client, form: str) -> None:
    src = o41_env.artifact("src")
    commit_ok(o41_api, open_box(o41_api, src, "box-s"), "step-00000010", make_files({"m": 4}))
    resume = form.format(src=src, proj=o41_env.prefix)
    target = _name(o41_env, "dst")
    expect_error(
        o41_api.open(target, resume, None, "box-f"), 400, "invalid_argument", "FORK-1.c", resume
    )
    check_equal(o41_api.artifact(target).status, 404, "FORK-1.c", f"target after {resume!r}")


@pytest.mark.rule("FORK-1.d")
@pytest.mark.scoped_key
def test_fork_scope_checked_on_both_sides(o41_env: Env, o41_api: Client) -> None:
    scoped = o41_env.client(key=o41_env.scoped_key, trail=o41_api.trail)
    readable, writable_src = scoped_name(o41_env, "fs", "read"), scoped_name(o41_env, "fs")
    hidden = o41_env.artifact("x-fs")
    for name in (readable, writable_src, hidden):
        commit_ok(o41_api, open_box(o41_api, name, "box-s"), "step-00000001", make_files({"m": 4}))
    refused = [
        (hidden, scoped_name(o41_env, "fd")),
        (readable, scoped_name(o41_env, "fd", "read")),
        (readable, o41_env.artifact("x-fd")),
        (hidden, o41_env.artifact("x-fd")),
    ]
    for source, target in refused:
        before = snapshot(o41_api, source)
        expect_fork_forbidden(scoped, target, source, "FORK-1.d",
                              f"fork {source} -> {target} with the scoped key", "box-f")
        check_equal(o41_api.artifact(target).status, 404, "FORK-1.d", f"{target} after 403")
        expect_unchanged(o41_api, source, before, "FORK-1.d", "a forbidden fork")
    for source in (readable, writable_src):
        expect_ok(
            scoped.open(scoped_name(o41_env, "fd"), f"o41://{source}/step-00000001"),
            "FORK-1.d",
            f"fork from {source} (readable) into a writable artifact",
        )
    if o41_env.read_key:
        reader = o41_env.client(key=o41_env.read_key, trail=o41_api.trail)
        expect_fork_forbidden(reader, scoped_name(o41_env, "fd"), readable, "FORK-1.d",
                              "fork with a read-only key")


@pytest.mark.rule("FORK-2.a", "FORK-2.b", "FORK-2.c")
def test_forks_from_first_middle_and_last_version(o41_env: Env, o41_api: Client) -> None:
    src = _name(o41_env, "src")
    committed = {}
    for step, place in (
        (100, "aws/us-east-1"),
        (200, "gcp/europe-west4"),
        (300, "azure/westeurope"),
    ):
        s = open_box(o41_api, src, f"box-{step}", place, rule="OPEN-2.a")
        files = make_files(FILES, step)
        committed[step] = (commit_ok(o41_api, s, f"step-{step:08d}", files), files)
    source_before = snapshot(o41_api, src)
    for step in (100, 200, 300, 200):
        dst = _name(o41_env, f"fork{step}")
        body = expect_ok(
            o41_api.open(dst, f"o41://{src}/step-{step:08d}", "aws/us-east-1", "box-f"),
            "FORK-2.a",
            f"fork from step {step}",
        )
        _check_resume(o41_api, body, *committed[step], "FORK-2.a")
        ff = {"artifact": src, "version": f"step-{step:08d}"}
        check_equal(
            expect_ok(o41_api.artifact(dst), "FORK-2.b", "read")["forked_from"],
            ff,
            "FORK-2.b",
            "forked_from",
        )
        f = open_box(o41_api, dst, "box-g", "gcp/europe-west4", rule="FORK-2.b")
        commit_ok(o41_api, f, "step-00000001", make_files({"m": 3}), rule="FORK-2.b")
        open_box(o41_api, dst, "box-h", rule="OPEN-2.a")
        after = expect_ok(o41_api.artifact(dst), "FORK-2.b", "artifacts/read of the fork")
        check_equal(
            after.get("forked_from"), ff, "FORK-2.b", "forked_from after commits and a relaunch"
        )
        expect_unchanged(o41_api, src, source_before, "FORK-2.c", f"fork from step {step}")
    expect_writer_alive(o41_api, s, "step-00000400", "FORK-2.c", "the source's holder after forks")
    nxt = expect_ok(o41_api.open(src, "latest", None, "box-next"), "FORK-2.c", "open of the source")
    check_equal(
        nxt.get("fenced"),
        {"epoch": s.epoch, "holder": s.holder},
        "FORK-2.c",
        "the source's next open names the source's own holder",
    )


@pytest.mark.rule("OPEN-3.c")
def test_fresh_open_of_an_empty_fork_succeeds(o41_env: Env, o41_api: Client) -> None:
    src, dst = _name(o41_env, "src"), _name(o41_env, "dst")
    commit_ok(o41_api, open_box(o41_api, src, "box-s"), "step-00000001", make_files({"m": 4}))
    fork = expect_ok(o41_api.open(dst, f"o41://{src}/step-00000001"), "FORK-2.a", "fork")
    body = expect_ok(o41_api.open(dst, None, None, "box-f"), "OPEN-3.c", "fresh open of the fork")
    check_equal(body.get("resume_from"), None, "OPEN-3.c", "resume_from of the fresh open")
    check_equal((body.get("fenced") or {}).get("epoch"), fork["epoch"], "FENCE-2.d", "fenced")
