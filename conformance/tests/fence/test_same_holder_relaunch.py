"""Fencing where shallow tests do not look: a relaunch with the same holder id (SkyPilot keeps
``SKYPILOT_TASK_ID`` across recoveries), and stale commits whose files arrive after the newer
open. Each test here killed a mutant of ``conformance.mutants`` that the rest survived."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_resumes
from conformance.rules import check
from conformance.rules import check_equal

TINY = {"m": 64}


def _names(api: Client, artifact: str) -> list[str]:
    body = expect_ok(api.list(artifact), "READ-1", "versions/list")
    return [v["version"] for v in body["versions"]]


@pytest.mark.rule("FENCE-1.a")
def test_relaunch_with_same_holder_gets_a_higher_epoch(o41_env: Env, o41_api: Client) -> None:
    """FENCE-1.a: the same holder id opening again is still a new, higher epoch."""
    name = o41_env.artifact("same-holder-epoch")
    holder = o41_env.holder("task-7")
    epochs = [open_box(o41_api, name, holder).epoch for _ in range(3)]
    check(epochs[0] < epochs[1] < epochs[2], "FENCE-1", f"relaunch epochs {epochs}")
    state = expect_ok(o41_api.artifact(name), "FENCE-1", "artifacts/read")
    check_equal(state["epoch"], epochs[-1], "FENCE-1", "artifact epoch after relaunches")


@pytest.mark.rule("FENCE-2.d")
def test_relaunch_with_same_holder_names_it_fenced(o41_env: Env, o41_api: Client) -> None:
    """FENCE-2.d: a relaunch with the same holder id fences (and names) its own old launch."""
    name = o41_env.artifact("same-holder-named")
    holder = o41_env.holder("task-7")
    first = open_box(o41_api, name, holder)
    second = open_box(o41_api, name, holder)
    check_equal(
        second.opened.get("fenced"),
        {"epoch": first.epoch, "holder": holder},
        "FENCE-2",
        "fenced of a relaunch with the same holder",
    )


@pytest.mark.rule("FENCE-2.a")
def test_old_launch_of_same_holder_cannot_write(o41_env: Env, o41_api: Client) -> None:
    """FENCE-2.a: the old launch of a relaunched task is fenced at write, same holder id or
    not; the relaunch keeps writing."""
    name = o41_env.artifact("same-holder-write")
    holder = o41_env.holder("task-7")
    old = open_box(o41_api, name, holder)
    commit_ok(o41_api, old, "step-00000001", make_files(TINY))
    new = open_box(o41_api, name, holder)
    files = make_files(TINY, seed=2)
    reply = o41_api.write(name, old.token, "step-00000002", [f.as_json() for f in
                                                             file_specs(files)])
    expect_error(reply, 409, "fenced", "FENCE-2", "write by the old launch of the same holder")
    commit_ok(o41_api, new, "step-00000002", files, rule="FENCE-2")
    check_equal(_names(o41_api, name), ["step-00000001", "step-00000002"], "FENCE-2", "versions")


@pytest.mark.rule("FENCE-2.b")
def test_stale_commit_fenced_when_files_arrive_after_newer_open(
    o41_env: Env, o41_api: Client
) -> None:
    """FENCE-2.b: write accepted before the newer open, files PUT after it, commit after it:
    409 fenced, and the version shows nowhere, not even in the next open's resume_from."""
    name = o41_env.artifact("stale-commit")
    old = open_box(o41_api, name, o41_env.holder("box-a"))
    commit_ok(o41_api, old, "step-00000001", make_files(TINY))
    files = make_files(TINY, seed=3)
    pending = start_upload(o41_api, name, old.token, "step-00000002", files, put=False)
    upload = expect_ok(pending.write, "FENCE-2", "write before the newer open")
    open_box(o41_api, name, o41_env.holder("box-b"))
    for f in upload["files"]:
        put = o41_api.put(f["url"], files[f["name"]])
        check(put.ok or put.status in (403, 409), "FENCE-2", f"PUT after the open: {put.status}")
    reply = o41_api.commit(name, old.token, str(upload["upload"]))
    expect_error(reply, 409, "fenced", "FENCE-2", "commit by the fenced box")
    check_equal(_names(o41_api, name), ["step-00000001"], "FENCE-2", "versions after it")
    latest = expect_ok(o41_api.read(name), "FENCE-2", "latest")
    check_equal(latest["version"], "step-00000001", "FENCE-2", "latest after it")
    expect_error(o41_api.read(name, "step-00000002"), 404, "not_found", "FENCE-2",
                 "read of the fenced version")
    later = open_box(o41_api, name, o41_env.holder("box-c"))
    expect_resumes(later, "step-00000001", "FENCE-2", "resume_from of the next open")


@pytest.mark.rule("FENCE-2.b")
def test_old_launch_of_same_holder_cannot_commit(o41_env: Env, o41_api: Client) -> None:
    """FENCE-2.b: same holder relaunched while its old launch's upload was in flight."""
    name = o41_env.artifact("same-holder-commit")
    holder = o41_env.holder("task-7")
    old = open_box(o41_api, name, holder)
    files = make_files(TINY, seed=4)
    pending = start_upload(o41_api, name, old.token, "step-00000001", files, put=False)
    upload = expect_ok(pending.write, "FENCE-2", "write before the relaunch")
    open_box(o41_api, name, holder)
    for f in upload["files"]:
        o41_api.put(f["url"], files[f["name"]])
    reply = o41_api.commit(name, old.token, str(upload["upload"]))
    expect_error(reply, 409, "fenced", "FENCE-2", "commit by the old launch")
    check_equal(_names(o41_api, name), [], "FENCE-2", "versions after the fenced commit")
