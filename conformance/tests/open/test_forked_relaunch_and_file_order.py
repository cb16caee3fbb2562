"""Opens that are right in the common case and easy to get wrong in a rarer one: a forked
artifact relaunched after its first own checkpoint, files declared out of name order. Each
test here killed a subtle mutant
(``conformance/mutants/m_open.py`` and ``m_fork.py``) the suite missed."""

from __future__ import annotations

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot
from conformance.rules import check
from conformance.rules import check_equal

UNSORTED = {"z/optim.bin": 700, "a.bin": 300, "m/model.bin": 500}


def _fork_of_a_version(
    env: Env, api: Client, source_slug: str, fork_slug: str, step: int, size: int
) -> tuple[str, Box]:
    """A source that committed ``step`` (one ``m.bin`` of ``size`` bytes, seeded by the
    step), and a box of a new fork of it: (the fork's name, its box)."""
    source = env.artifact(source_slug)
    writer = open_box(api, source, "src-box")
    commit_ok(api, writer, f"step-{step:08d}", make_files({"m.bin": size}, step))
    fork = env.artifact(fork_slug)
    box = open_box(api, fork, "fork-box", resume=f"o41://{source}/step-{step:08d}",
                   rule="FORK-2")
    return fork, box


@pytest.mark.rule("OPEN-2.a")
def test_relaunch_of_fork_resumes_its_own_first_and_second_version(
    o41_env: Env, o41_api: Client
) -> None:
    """OPEN-2.a: once a fork committed a version of its own, a latest open of the fork
    resumes that version (not the source's), after one own version and after two."""
    fork, box = _fork_of_a_version(o41_env, o41_api, "fork-own-src", "fork-own", 10, 64)
    for step in (11, 12):
        files = make_files({"m.bin": 80 + step}, step)
        version = f"step-{step:08d}"
        commit_ok(o41_api, box, version, files)
        body = expect_ok(o41_api.open(fork, "latest", None, f"relaunch-{step}"), "OPEN-2",
                         f"relaunch of the fork after {version}")
        resumed = body.get("resume_from") or {}
        check_equal((resumed.get("artifact"), resumed.get("version")), (fork, version),
                    "OPEN-2", f"resume_from of the fork after its own {version}")
        check_equal(download(o41_api, resumed), files, "OPEN-2", f"bytes of {version}")
        box = open_box(o41_api, fork, f"writer-{step}", rule="OPEN-2")


@pytest.mark.rule("OPEN-2.a")
def test_resume_of_files_declared_out_of_name_order(o41_env: Env, o41_api: Client) -> None:
    """OPEN-2.a: files declared in no particular order resume each with its own size and
    sha256, whatever order the reply lists them in."""
    name = o41_env.artifact("unsorted")
    box = open_box(o41_api, name, "box-a")
    files = make_files(UNSORTED, 5)
    commit_ok(o41_api, box, "step-00000001", files)
    body = expect_ok(o41_api.open(name, "latest", None, "box-b"), "OPEN-2", "relaunch")
    resumed = body.get("resume_from") or {}
    listed = {f.get("name"): f for f in resumed.get("files") or []}
    check_equal(sorted(listed), sorted(files), "OPEN-2", "names of the resumed files")
    for fname, data in files.items():
        got = listed[fname]
        check((got.get("size"), got.get("sha256")) == (len(data), sha256(data)), "OPEN-2",
              f"{fname}: resume_from says size {got.get('size')} sha256 {got.get('sha256')}")
    check_equal(download(o41_api, resumed), files, "OPEN-2", "bytes of the resumed files")



@pytest.mark.rule("OPEN-3.a", "OPEN-3.b")
def test_fresh_open_of_fork_with_its_own_version_refused_and_changes_nothing(
    o41_env: Env, o41_api: Client
) -> None:
    """OPEN-3.a/b: a forked artifact with a version of its own has checkpoints: a fresh
    open is 409 has_checkpoints, and epoch, holder, versions and forked_from stay."""
    fork, box = _fork_of_a_version(o41_env, o41_api, "fresh-fork-src", "fresh-fork", 3, 32)
    commit_ok(o41_api, box, "step-00000004", make_files({"m.bin": 40}, 4))
    before = snapshot(o41_api, fork)
    for place in (None, o41_env.topology.locations[0]):
        expect_error(o41_api.open(fork, None, place, "fresh-box"), 409, "has_checkpoints",
                     "OPEN-3", f"fresh open of a fork with its own version, place {place}")
        expect_unchanged(o41_api, fork, before, "OPEN-3", "a refused fresh open")
    expect_writer_alive(o41_api, box, "step-00000005", "OPEN-3", "after the refusals")


@pytest.mark.rule("VER-4.c", "FORK-1.a")
def test_fork_into_artifact_with_only_a_staged_upload_succeeds(
    o41_env: Env, o41_api: Client
) -> None:
    """VER-4.c: an upload with every file PUT but never committed is no version: a fork
    into its artifact is a fork into an empty artifact, and resumes the source version."""
    source = o41_env.artifact("staged-src")
    writer = open_box(o41_api, source, "src-box")
    commit_ok(o41_api, writer, "step-00000002", make_files({"m.bin": 48}, 2))
    target = o41_env.artifact("staged-target")
    box = open_box(o41_api, target, "target-box")
    start_upload(o41_api, target, box.token, "step-00000001", make_files({"m.bin": 16}, 1))
    body = expect_ok(o41_api.open(target, f"o41://{source}/step-00000002", None, "forker"),
                     "VER-4", "fork into an artifact whose only upload is uncommitted")
    check_equal((body.get("resume_from") or {}).get("version"), "step-00000002", "VER-4",
                "resume_from of the fork")
