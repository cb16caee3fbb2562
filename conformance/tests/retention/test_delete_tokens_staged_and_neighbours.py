"""Retention (VER-7) beyond one artifact's own versions: a delete with a token that is not
the artifact's (unknown, or of another artifact) is 400, a version that is only being
uploaded is not there to delete (404), a delete refused as unknown leaves that step free,
and a delete touches only its own artifact: another artifact, a fork among them, still
reads and lists its version of the same name, and a fork keeps its forked_from."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check_equal

V = [f"step-{n:08d}" for n in range(0, 6)]


def _listed(api: Client, artifact: str, clause: str) -> list[str]:
    body = expect_ok(api.list(artifact), clause, f"list {artifact}")
    return [v.get("version") for v in body.get("versions") or []]


@pytest.mark.rule("VER-7.d")
def test_a_delete_with_an_unknown_token_or_another_artifacts_token_is_invalid(
    o41_env: Env, o41_api: Client
) -> None:
    """Small points: an unknown token, or one of another artifact, is 400 on every call
    that takes a token, the delete too; the other artifact's token is its newest (its epoch
    as high as this artifact's), so only its artifact is wrong. Nothing changes."""
    box = open_box(o41_api, o41_env.artifact("delete-tokens"), "box-a")
    for n in (1, 2, 3):
        commit_ok(o41_api, box, V[n], make_files({"m": 30 + n}, 90 + n), "VER-7.d")
    other = open_box(o41_api, o41_env.artifact("delete-tokens-other"), "box-o")
    for _ in range(3):  # the other artifact's epoch passes this one's
        other = open_box(o41_api, other.artifact, "box-o")
    before = snapshot(o41_api, box.artifact)
    cases = {
        "an unknown token": "tk-never-issued-0001",
        "another artifact's newest token": other.token,
    }
    for what, token in cases.items():
        for version in (V[1], V[2]):
            expect_error(o41_api.delete(box.artifact, token, version), 400,
                         "invalid_argument", "VER-7.d", f"delete of {version} with {what}")
            expect_unchanged(o41_api, box.artifact, before, "VER-7.d",
                             f"delete of {version} with {what}")
    check_equal(_listed(o41_api, box.artifact, "VER-7.d"), [V[1], V[2], V[3]], "VER-7.d",
                "list after the refused deletes")


@pytest.mark.rule("VER-7.d", "VER-4.c")
def test_a_version_only_being_uploaded_is_not_found_by_a_delete(
    o41_env: Env, o41_api: Client
) -> None:
    """An upload with every file PUT but no commit is no version (VER-4.c): deleting its
    name is 404 and changes nothing; the upload then commits as the latest."""
    box = open_box(o41_api, o41_env.artifact("delete-staged"), "box-a")
    for n in (1, 2):
        commit_ok(o41_api, box, V[n], make_files({"m": 40 + n}, 95 + n), "VER-7.d")
    files = make_files({"m": 44, "n/o.bin": 12}, 98)
    up = start_upload(o41_api, box.artifact, box.token, V[4], files)
    upload = up.upload_id
    expect_ok(up.write, "VER-7.d", "the write of the staged version")
    before = snapshot(o41_api, box.artifact)
    expect_error(o41_api.delete(box.artifact, box.token, V[4]), 404, "not_found", "VER-7.d",
                 "delete of a version whose upload is not committed")
    expect_unchanged(o41_api, box.artifact, before, "VER-7.d", "the refused delete")
    expect_ok(o41_api.commit(box.artifact, box.token, str(upload)), "VER-4.c",
              "commit of the upload after the refused delete")
    check_equal(_listed(o41_api, box.artifact, "VER-7.d"), [V[1], V[2], V[4]], "VER-7.d",
                "list after the commit")
    body = expect_ok(o41_api.read(box.artifact, V[4], urls=True), "VER-7.d", f"read {V[4]}")
    check_equal(download(o41_api, body), files, "VER-7.d", f"the bytes of {V[4]}")


@pytest.mark.rule("VER-7.a", "FORK-2.b", "FORK-2.c")
def test_a_delete_leaves_the_same_version_name_of_other_artifacts_and_forks(
    o41_env: Env, o41_api: Client
) -> None:
    """Source A has steps 1-3; B, a fork of A at step 1, commits steps 2 and 3 of its own;
    C is unrelated with steps 1-3. Deleting A's step 2 leaves B's and C's step 2 readable,
    listed and counted, with their own bytes, and B's delete of its step 2 leaves A's."""
    a = open_box(o41_api, o41_env.artifact("delete-neighbours-a"), "box-a")
    c = open_box(o41_api, o41_env.artifact("delete-neighbours-c"), "box-c")
    mine = {n: make_files({"m": 50 + n}, 100 + n) for n in (1, 2, 3)}
    theirs = {n: make_files({"m": 60 + n}, 110 + n) for n in (1, 2, 3)}
    for n in (1, 2, 3):
        commit_ok(o41_api, a, V[n], mine[n], "VER-7.a")
        commit_ok(o41_api, c, V[n], theirs[n], "VER-7.a")
    b = open_box(o41_api, o41_env.artifact("delete-neighbours-b"), "box-b",
                 resume=f"o41://{a.artifact}/{V[1]}", rule="FORK-2.a")
    forked = {n: make_files({"m": 70 + n}, 120 + n) for n in (2, 3)}
    for n in (2, 3):
        commit_ok(o41_api, b, V[n], forked[n], "VER-7.a")
    expect_ok(o41_api.delete(a.artifact, a.token, V[2]), "VER-7.a", f"delete of A's {V[2]}")
    expect_error(o41_api.read(a.artifact, V[2]), 404, "not_found", "VER-7.a",
                 f"read of A's deleted {V[2]}")
    for box, files, listed in ((b, forked, [V[2], V[3]]), (c, theirs, [V[1], V[2], V[3]])):
        body = expect_ok(o41_api.read(box.artifact, V[2], urls=True), "VER-7.a",
                         f"read of {box.artifact}'s {V[2]} after A's delete")
        check_equal(download(o41_api, body), files[2], "VER-7.a",
                    f"the bytes of {box.artifact}'s {V[2]}")
        check_equal(_listed(o41_api, box.artifact, "VER-7.a"), listed, "VER-7.a",
                    f"list of {box.artifact} after A's delete")
        state = expect_ok(o41_api.artifact(box.artifact), "VER-7.a", "artifacts/read")
        check_equal((state.get("latest"), state.get("versions")), (V[3], len(listed)),
                    "VER-7.a", f"latest and count of {box.artifact} after A's delete")
    expect_ok(o41_api.delete(b.artifact, b.token, V[2]), "VER-7.a", f"delete of B's {V[2]}")
    check_equal(_listed(o41_api, a.artifact, "VER-7.a"), [V[1], V[3]], "VER-7.a",
                "A's list after B's delete")
    body = expect_ok(o41_api.read(a.artifact, V[1], urls=True), "FORK-2.c",
                     f"read of A's {V[1]}, the fork's source, after B's delete")
    check_equal(download(o41_api, body), mine[1], "FORK-2.c", f"the bytes of A's {V[1]}")
    # The fork's source version deleted: the fork still says where it came from.
    expect_ok(o41_api.delete(a.artifact, a.token, V[1]), "VER-7.a", f"delete of A's {V[1]}")
    state = expect_ok(o41_api.artifact(b.artifact), "FORK-2.b", "artifacts/read of B")
    check_equal(state.get("forked_from"), {"artifact": a.artifact, "version": V[1]}, "FORK-2.b",
                "B's forked_from after its source version was deleted")
    check_equal(_listed(o41_api, b.artifact, "VER-7.a"), [V[3]], "VER-7.a",
                "B's list after its source version was deleted")


@pytest.mark.rule("VER-7.d", "VER-3.a")
def test_a_delete_refused_as_unknown_leaves_that_step_free(
    o41_env: Env, o41_api: Client
) -> None:
    """Deleting steps that were never committed (one above the latest, one below it) is
    404 and changes nothing: the step above is then written and committed as usual."""
    box = open_box(o41_api, o41_env.artifact("delete-unknown-step"), "box-a")
    for n in (1, 3):
        commit_ok(o41_api, box, V[n], make_files({"m": 20 + n}, 130 + n), "VER-7.d")
    for version in (V[2], V[4], V[5]):
        expect_error(o41_api.delete(box.artifact, box.token, version), 404, "not_found",
                     "VER-7.d", f"delete of {version}, never committed")
    commit_ok(o41_api, box, V[4], make_files({"m": 24}, 134), "VER-7.d")
    commit_ok(o41_api, box, V[5], make_files({"m": 25}, 135), "VER-7.d")
    check_equal(_listed(o41_api, box.artifact, "VER-7.d"), [V[1], V[3], V[4], V[5]],
                "VER-7.d", "list after the refused deletes and the later commits")
