"""Which step a new version is compared with (VER-3.a, VER-4.c): the latest *committed* step
of the artifact itself. A fork has none of its own, so its first version may have any step,
even one below the source's; an upload that was written and PUT but never committed counts
for nothing, so a lower step still commits past it (and it can still commit after); nor
does a commit refused as incomplete claim its version name."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal


def _listed(api: Client, artifact: str, clause: str) -> list[str]:
    """The listed versions; a list names no reader's place, so each row's route and
    cross_cloud are null (XC-1.c)."""
    body = expect_ok(api.list(artifact), clause, f"list {artifact}")
    rows = body.get("versions") or []
    check_equal([(v.get("route"), v.get("cross_cloud")) for v in rows], [(None, None)] * len(rows),
                "READ-1.c", f"route and cross_cloud of the versions listed of {artifact}")
    return [v.get("version") for v in rows]


@pytest.mark.rule("VER-3.a", "FORK-2.b", "READ-1.a", "READ-1.c")
def test_a_forks_first_version_may_have_a_step_below_the_source_version(
    o41_env: Env, o41_api: Client
) -> None:
    src = open_box(o41_api, o41_env.artifact("fork-steps-src"), "box-a")
    for step in (100, 300):
        commit_ok(o41_api, src, f"step-{step:08d}", make_files({"m": 20}, step), "VER-3.a")
    fork = open_box(o41_api, o41_env.artifact("fork-steps"), "box-f",
                    resume=f"o41://{src.artifact}/step-00000300", rule="FORK-2.a")
    # The fork has no version of its own yet: its latest is nobody's, not the source's.
    expect_error(o41_api.read(fork.artifact, "latest"), 404, "not_found", "READ-1.a",
                 "read of latest of a fork with no version of its own")
    check_equal(_listed(o41_api, fork.artifact, "READ-1.c"), [], "READ-1.c",
                "list of a fork with no version of its own")
    commit_ok(o41_api, fork, "step-00000001", make_files({"m": 21}, 1), "VER-3.a")
    commit_ok(o41_api, fork, "step-00000200", make_files({"m": 22}, 2), "VER-3.a")
    reply = start_upload(o41_api, fork.artifact, fork.token, "step-00000150",
                         make_files({"m": 23}, 3))
    if reply.upload_id is None:
        expect_error(reply.write, 409, "not_after_latest", "VER-3.a", "write of step 150")
    else:
        expect_error(o41_api.commit(fork.artifact, fork.token, reply.upload_id), 409,
                     "not_after_latest", "VER-3.a", "commit of step 150 after step 200")
    check_equal(_listed(o41_api, fork.artifact, "VER-3.a"), ["step-00000001", "step-00000200"],
                "VER-3.a", "the fork's own versions")
    state = expect_ok(o41_api.artifact(fork.artifact), "FORK-2.b", "artifacts/read")
    check_equal(state.get("forked_from"),
                {"artifact": src.artifact, "version": "step-00000300"}, "FORK-2.b",
                "forked_from after the fork's own versions")
    check_equal(_listed(o41_api, src.artifact, "VER-3.a"), ["step-00000100", "step-00000300"],
                "VER-3.a", "the source's versions")


@pytest.mark.rule("VER-4.c", "VER-3.a")
def test_an_uncommitted_upload_of_a_higher_step_does_not_raise_the_latest(
    o41_env: Env, o41_api: Client
) -> None:
    """Step 9 written and PUT, never committed; step 2, then step 5 commit past it (by the
    same box, and after a relaunch by the next box); the fenced box's step 9 never shows."""
    box = open_box(o41_api, o41_env.artifact("abandoned-step"), "box-a")
    commit_ok(o41_api, box, "step-00000001", make_files({"m": 10}, 31), "VER-4.c")
    staged = start_upload(o41_api, box.artifact, box.token, "step-00000009",
                          make_files({"m": 11}, 32))
    expect_ok(staged.write, "VER-4.c", "the write of step 9")
    commit_ok(o41_api, box, "step-00000002", make_files({"m": 12}, 33), "VER-4.c")
    after = open_box(o41_api, box.artifact, "box-b")
    commit_ok(o41_api, after, "step-00000005", make_files({"m": 13}, 34), "VER-4.c")
    expect_error(o41_api.commit(box.artifact, box.token, str(staged.upload_id)), 409,
                 "fenced", "FENCE-2.b", "the fenced box's commit of step 9")
    check_equal(_listed(o41_api, box.artifact, "VER-4.c"),
                ["step-00000001", "step-00000002", "step-00000005"], "VER-4.c",
                "the committed versions")
    staged = start_upload(o41_api, after.artifact, after.token, "step-00000008",
                          make_files({"m": 14}, 35))
    commit_ok(o41_api, after, "step-00000006", make_files({"m": 15}, 36), "VER-4.c")
    expect_ok(o41_api.commit(after.artifact, after.token, str(staged.upload_id)), "VER-4.c",
              "commit of step 8, written before step 6 was")
    latest = expect_ok(o41_api.read(after.artifact, "latest"), "READ-1.a", "read latest")
    check_equal(latest.get("version"), "step-00000008", "READ-1.a", "latest after step 8")


@pytest.mark.rule("VER-4.a", "VER-2.a")
def test_a_commit_refused_as_incomplete_claims_no_version(
    o41_env: Env, o41_api: Client
) -> None:
    """Step 2's first upload is refused 409 incomplete (its files never PUT): the name stays
    free, so a second upload of step 2 writes and commits, and the first is then 409."""
    box = open_box(o41_api, o41_env.artifact("incomplete-claims"), "box-a")
    commit_ok(o41_api, box, "step-00000001", make_files({"m": 10}, 37), "VER-4.a")
    first = start_upload(o41_api, box.artifact, box.token, "step-00000002",
                         make_files({"m": 11, "n": 12}, 38), put=False)
    expect_error(o41_api.commit(box.artifact, box.token, str(first.upload_id)), 409,
                 "incomplete", "VER-4.a", "commit of step 2 with nothing PUT")
    commit_ok(o41_api, box, "step-00000002", make_files({"m": 13}, 39), "VER-4.a")
    # Still incomplete and now of a committed name: 409 either way (two 409s have no order).
    again = o41_api.commit(box.artifact, box.token, str(first.upload_id))
    check(again.status == 409 and again.code in ("incomplete", "version_exists"), "VER-2.a",
          f"the first upload of step 2 once another committed it got {again.brief()}")
    check_equal(_listed(o41_api, box.artifact, "VER-4.a"), ["step-00000001", "step-00000002"],
                "VER-4.a", "the committed versions")
