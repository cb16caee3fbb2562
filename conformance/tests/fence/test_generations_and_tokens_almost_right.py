"""Fencing at its edges: relaunches with the same holder id, several generations of boxes,
uploads finished before the fence, tokens that look almost right (FENCE-1..3).

Each test breaks if one clause alone is broken, including in ways a shallow test misses:
only on the second or third relaunch, only for a box two generations back, only when the
relaunch reuses the holder id (SkyPilot keeps ``SKYPILOT_TASK_ID``), only with >= 3 versions.
"""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.names import edge_name
from conformance.names import scoped_name
from conformance.probes import expect_invisible
from conformance.probes import expect_resumes
from conformance.probes import expect_writer_alive
from conformance.rules import check
from conformance.rules import check_equal

TINY = {"m": 32}


def _name(env: Env, slug: str) -> str:
    return edge_name(env.prefix, slug, secrets.token_hex(3))


def _staged(api: Client, box: Box, version: str, seed: int = 1) -> str:
    """An upload with every file PUT, left uncommitted; its upload id."""
    files = make_files({"model.pt": 300, "optim/state.bin": 40}, seed)
    up = start_upload(api, box.artifact, box.token, version, files)
    return str(expect_ok(up.write, "VER-4.a", f"write of {version} by {box.holder}")["upload"])


def _fenced_write(api: Client, box: Box, version: str, what: str) -> None:
    specs = [f.as_json() for f in file_specs(make_files(TINY))]
    expect_error(
        api.write(box.artifact, box.token, version, specs), 409, "fenced", "FENCE-2.a", what
    )


@pytest.mark.rule("FENCE-1.a", "FENCE-2.a", "FENCE-2.b", "FENCE-2.d", "FENCE-3.a", "OPEN-2.a")
def test_relaunch_with_same_holder_still_fences_old_launch(o41_env: Env, o41_api: Client) -> None:
    """SkyPilot relaunches a managed job with the same SKYPILOT_TASK_ID: the holder id is
    the same, the launch is not. Epochs, not holder ids, decide who may write."""
    name, holder = _name(o41_env, "task"), f"task-{secrets.token_hex(2)}"
    first = open_box(o41_api, name, holder, "aws/us-east-1")
    commit_ok(o41_api, first, "step-00000001", make_files(TINY, 1))
    staged = _staged(o41_api, first, "step-00000002")
    second = open_box(o41_api, name, holder, "aws/us-east-1", rule="OPEN-2.a")
    check(
        second.epoch > first.epoch,
        "FENCE-1.a",
        f"relaunch epoch {second.epoch} after {first.epoch}",
    )
    check_equal(
        second.opened.get("fenced"),
        {"epoch": first.epoch, "holder": holder},
        "FENCE-2.d",
        "the relaunch with the same holder names the launch it fenced",
    )
    expect_resumes(second, "step-00000001", "OPEN-2.a",
                   "resume_from of the relaunch")
    _fenced_write(o41_api, first, "step-00000003", "write by the old launch, same holder id")
    expect_error(
        o41_api.commit(name, first.token, staged),
        409,
        "fenced",
        "FENCE-2.b",
        "commit by the old launch (same holder id) of an upload finished before the relaunch",
    )
    expect_invisible(o41_api, name, "step-00000002", "FENCE-2.b", "the old launch's upload")
    third = open_box(o41_api, name, holder, "gcp/europe-west4", rule="OPEN-2.a")
    check_equal(
        third.opened.get("fenced"),
        {"epoch": second.epoch, "holder": holder},
        "FENCE-2.d",
        "the second relaunch names the first relaunch",
    )
    for old, label in ((first, "first"), (second, "second")):
        _fenced_write(o41_api, old, "step-00000004", f"write by the {label} launch")
    expect_writer_alive(o41_api, third, "step-00000004", "FENCE-2.a", "the newest launch")


@pytest.mark.rule("FENCE-2.a", "FENCE-1.a")
def test_write_fenced_for_every_older_generation(o41_env: Env, o41_api: Client) -> None:
    name = _name(o41_env, "gens")
    places = ["aws/us-east-1", "gcp/europe-west4", "azure/westeurope", None]
    boxes = [open_box(o41_api, name, f"gen-{i}", p) for i, p in enumerate(places)]
    epochs = [b.epoch for b in boxes]
    check(
        all(a < b for a, b in zip(epochs, epochs[1:], strict=False)),
        "FENCE-1.a",
        f"epochs of four relaunches: {epochs}",
    )
    for box in boxes[:-1]:
        for version in ("step-00000001", "step-00000500"):
            _fenced_write(o41_api, box, version, f"write of {version} by {box.holder}")
    expect_writer_alive(o41_api, boxes[-1], "step-00000001", "FENCE-2.a", "the newest box")
    for box in boxes[:-1]:
        _fenced_write(o41_api, box, "step-00000002", f"write by {box.holder} after a commit")


@pytest.mark.rule("FENCE-2.b", "FENCE-3.a", "OPEN-2.a", "VER-4.c")
def test_commits_of_older_generations_never_show(o41_env: Env, o41_api: Client) -> None:
    name = _name(o41_env, "zombies")
    a = open_box(o41_api, name, "box-a", "aws/us-east-1")
    for step in (1, 2, 3):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files(TINY, step))
    a_up = _staged(o41_api, a, "step-00000010")
    b = open_box(o41_api, name, "box-b", "gcp/europe-west4", rule="OPEN-2.a")
    expect_resumes(b, "step-00000003", "FENCE-3.a",
                   "resume_from of B (A's upload was finished, not committed)")
    b_up = _staged(o41_api, b, "step-00000020", 2)
    expect_error(
        o41_api.commit(name, a.token, a_up), 409, "fenced", "FENCE-3.a", "A's commit after B"
    )
    c = open_box(o41_api, name, "box-c", "azure/westeurope", rule="OPEN-2.a")
    expect_resumes(c, "step-00000003", "FENCE-2.b",
                   "resume_from of C after two refused commits")
    for box, upload, version in ((b, b_up, "step-00000020"), (a, a_up, "step-00000010")):
        expect_error(
            o41_api.commit(name, box.token, upload),
            409,
            "fenced",
            "FENCE-2.b",
            f"commit of {version} by {box.holder} after C's open",
        )
    for version in ("step-00000010", "step-00000020"):
        expect_invisible(o41_api, name, version, "FENCE-2.b", "a fenced commit")
        expect_error(
            o41_api.open(o41_env.artifact("fk"), f"o41://{name}/{version}"),
            404,
            "not_found",
            "FENCE-2.b",
            f"fork from the fenced {version}",
        )
    d = open_box(o41_api, name, "box-d", "aws/us-east-1", rule="OPEN-2.a")
    resume = d.opened.get("resume_from") or {}
    check_equal(resume.get("version"), "step-00000003", "FENCE-2.b", "resume_from of D")
    check_equal(download(o41_api, resume), make_files(TINY, 3), "OPEN-2.b", "bytes of step 3")


@pytest.mark.rule("FENCE-2.b", "VER-4.c", "OPEN-3.c")
def test_fenced_commit_never_counts_for_fresh_open(o41_env: Env, o41_api: Client) -> None:
    name = _name(o41_env, "freshz")
    a = open_box(o41_api, name, "box-a", resume=None, rule="OPEN-3.c")
    staged = _staged(o41_api, a, "step-00000001")
    b = open_box(o41_api, name, "box-b", resume=None, rule="OPEN-3.c")
    expect_error(o41_api.commit(name, a.token, staged), 409, "fenced", "FENCE-2.b", "A's commit")
    expect_invisible(o41_api, name, "step-00000001", "FENCE-2.b", "A's fenced commit")
    c = expect_ok(o41_api.open(name, None, None, "box-c"), "FENCE-2.b", "fresh open after it")
    check_equal(c.get("resume_from"), None, "FENCE-2.b", "resume_from of the fresh open")
    check_equal(
        c.get("fenced"), {"epoch": b.epoch, "holder": "box-b"}, "FENCE-2.d", "whom C fenced"
    )


@pytest.mark.rule("FENCE-2.c")
@pytest.mark.parametrize("same_holder", [False, True], ids=["other-holder", "same-holder"])
def test_upload_committed_with_newer_token_fenced(
    o41_env: Env, o41_api: Client, same_holder: bool
) -> None:
    name = _name(o41_env, "launder")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files(TINY, 1))
    staged = _staged(o41_api, a, "step-00000002")
    b = open_box(o41_api, name, "box-a" if same_holder else "box-b")
    b_staged = _staged(o41_api, b, "step-00000003", 3)
    c = open_box(o41_api, name, "box-a" if same_holder else "box-c")
    attempts = [(staged, b, "A's upload, B's token"), (staged, c, "A's upload, C's token")]
    attempts += [(b_staged, c, "B's upload, C's token")]
    for upload, box, what in attempts:
        expect_error(o41_api.commit(name, box.token, upload), 409, "fenced", "FENCE-2.c", what)
    for version in ("step-00000002", "step-00000003"):
        expect_invisible(o41_api, name, version, "FENCE-2.c", "a laundered upload")
    expect_writer_alive(o41_api, c, "step-00000004", "FENCE-2.c", "C after the refusals")


@pytest.mark.rule("FENCE-2.d")
def test_open_names_the_open_before_it_whatever_its_kind(o41_env: Env, o41_api: Client) -> None:
    src, name = _name(o41_env, "fsrc"), _name(o41_env, "fdst")
    s = open_box(o41_api, src, "box-s")
    commit_ok(o41_api, s, "step-00000007", make_files(TINY, 7))
    first = expect_ok(o41_api.open(name, "latest"), "OPEN-1.a", "first open, holder omitted")
    check_equal(first.get("fenced"), None, "FENCE-2.d", "fenced of the first open")
    prev = {"epoch": first["epoch"], "holder": first["holder"]}
    expect_error(o41_api.open(name, "o41://x/y"), 400, "invalid_argument", "FORK-1.c", "bad")
    for resume, holder in (
        ("latest", "box-b"),
        (None, "box-c"),
        (f"o41://{src}/step-00000007", "box-d"),
    ):
        body = expect_ok(o41_api.open(name, resume, None, holder), "FENCE-2.d", f"open {resume}")
        check_equal(body.get("fenced"), prev, "FENCE-2.d", f"whom the open ({resume}) fenced")
        prev = {"epoch": body["epoch"], "holder": holder}
    fork = expect_ok(
        o41_api.open(_name(o41_env, "fnew"), f"o41://{src}/step-00000007", None, "box-e"),
        "FORK-2.a",
        "fork into a new artifact",
    )
    check_equal(fork.get("fenced"), None, "FENCE-2.d", "fenced of a fork into a new artifact")


@pytest.mark.rule("FENCE-2.e")
def test_tokens_almost_right_are_invalid(o41_env: Env, o41_api: Client) -> None:
    base = f"{o41_env.prefix}/tok{secrets.token_hex(3)}"
    name = f"{base}-run"
    a = open_box(o41_api, name, "box-a")
    staged = _staged(o41_api, a, "step-00000001")
    lookalikes = [f"{base}-Run", f"{base}-run-2", f"{base}-ru"]
    foreign = [open_box(o41_api, other, "box-o").token for other in lookalikes]
    flipped = a.token[:-3] + ("A" if a.token[-3] != "A" else "B") + a.token[-2:]
    tokens = [*foreign, flipped, a.token + "x", a.token[:-1], "", "tk_unknown"]
    specs = [f.as_json() for f in file_specs(make_files(TINY))]
    for token in tokens:
        expect_error(
            o41_api.write(name, token, "step-00000002", specs),
            400,
            "invalid_argument",
            "FENCE-2.e",
            f"write with token {token!r}",
        )
        expect_error(
            o41_api.commit(name, token, staged),
            400,
            "invalid_argument",
            "FENCE-2.e",
            f"commit with token {token!r}",
        )
    expect_invisible(
        o41_api, name, "step-00000001", "FENCE-2.e", "an upload committed by bad tokens"
    )
    expect_ok(o41_api.commit(name, a.token, staged), "FENCE-2.e", "commit with the right token")


@pytest.mark.rule("FENCE-2.e")
@pytest.mark.scoped_key
def test_token_of_the_same_name_in_another_project_is_invalid(
    o41_env: Env, o41_api: Client
) -> None:
    """A token belongs to one artifact, project included: the token of ``Q/run`` is 400 on
    ``P/run`` (a server that files tokens by the name part alone takes it). The other
    project is the scoped key's write prefix, where the write key writes too."""
    other = scoped_name(o41_env, "tok-twin")
    project, part = o41_env.artifact("tok-twin").split("/")[0], other.split("/", 1)[1]
    if other.split("/")[0] == project:
        pytest.skip("the scoped key's write prefix is inside the run's project")
    name = f"{project}/{part}"
    a = open_box(o41_api, name, "box-a")
    twin = open_box(o41_api, other, "box-t")
    staged = _staged(o41_api, a, "step-00000001")
    specs = [f.as_json() for f in file_specs(make_files(TINY))]
    expect_error(o41_api.write(name, twin.token, "step-00000002", specs), 400,
                 "invalid_argument", "FENCE-2.e", f"write to {name} with the token of {other}")
    expect_error(o41_api.commit(name, twin.token, staged), 400, "invalid_argument",
                 "FENCE-2.e", f"commit to {name} with the token of {other}")
    expect_invisible(o41_api, name, "step-00000001", "FENCE-2.e", "the refused commit")
    expect_ok(o41_api.commit(name, a.token, staged), "FENCE-2.e", "commit with the right token")


@pytest.mark.rule("FENCE-1.a")
def test_epoch_rises_over_every_kind_of_open(o41_env: Env, o41_api: Client) -> None:
    src, name = _name(o41_env, "esrc"), _name(o41_env, "edst")
    s = open_box(o41_api, src, "box-s")
    commit_ok(o41_api, s, "step-00000001", make_files(TINY, 1))
    epochs: list[int] = []
    for resume in ("latest", None, "latest", f"o41://{src}/step-00000001", None, "latest"):
        body = expect_ok(o41_api.open(name, resume, None, "box"), "FENCE-1.a", f"open {resume}")
        epochs.append(body["epoch"])
        expect_error(o41_api.open(src, None), 409, "has_checkpoints", "OPEN-3.a", "refused")
    check(
        all(a < b for a, b in zip(epochs, epochs[1:], strict=False)),
        "FENCE-1.a",
        f"epochs of latest, fresh, latest, fork, fresh, latest opens: {epochs}",
    )
    state = expect_ok(o41_api.artifact(name), "READ-1.a", "artifacts/read")
    check_equal(state.get("epoch"), epochs[-1], "FENCE-1.a", "artifact epoch after the opens")
    check_equal(
        expect_ok(o41_api.artifact(src), "READ-1.a", "source")["epoch"],
        s.epoch,
        "FORK-2.c",
        "source epoch after forks and refused opens",
    )
    commit_ok(o41_api, s, "step-00000002", make_files(TINY, 2), rule="FORK-2.c")


@pytest.mark.rule("FENCE-2.b", "FENCE-3.a")
def test_commit_fenced_when_files_arrive_after_newer_open(o41_env: Env, o41_api: Client) -> None:
    """A's write was answered before B's open; its files arrive after it: still fenced."""
    name = _name(o41_env, "late")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files(TINY, 1))
    files = make_files({"model.pt": 500, "optim.pt": 60}, 2)
    up = start_upload(o41_api, name, a.token, "step-00000002", files, put=False)
    body = expect_ok(up.write, "VER-4.a", "write by A")
    b = open_box(o41_api, name, "box-b", rule="OPEN-2.a")
    for f in body["files"]:
        o41_api.put(f["url"], files[f["name"]])  # may be refused too; the commit must be
    expect_error(
        o41_api.commit(name, a.token, body["upload"]),
        409,
        "fenced",
        "FENCE-2.b",
        "commit by A of files PUT after B's open",
    )
    expect_invisible(o41_api, name, "step-00000002", "FENCE-2.b", "A's late upload")
    expect_writer_alive(o41_api, b, "step-00000002", "FENCE-2.b", "B after A's refusal")
