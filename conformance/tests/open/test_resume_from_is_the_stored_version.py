"""What an open resumes is the stored Version itself, not one rebuilt from the artifact's
current state: ``resume_from`` says the same ``epoch``, ``holder``, ``created_at``,
``size``, ``location`` and files as ``versions/read`` of that version (a fork's names its
source artifact), and the artifact's own ``created_at`` does not move when it is opened
again. Each test here killed a mutant written blind from docs/contract.md."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import parse_time
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal

V1, V2, V3 = "step-00000001", "step-00000002", "step-00000003"
#: The fields of a Version that do not depend on the reader or on URLs (API-1.b).
STORED = ("artifact", "version", "step", "location", "size", "created_at", "epoch", "holder")


def _stored(version: dict[str, Any]) -> dict[str, Any]:
    files = sorted((f.get("name"), f.get("size"), f.get("sha256"))
                   for f in version.get("files") or [])
    # a timestamp may be spelled differently by two replies (Z or +00:00): compare the time
    fields = {k: version.get(k) for k in STORED}
    fields["created_at"] = parse_time(fields["created_at"])
    return {**fields, "files": files}


@pytest.mark.rule("API-1.b", "OPEN-2.a")
def test_resume_from_names_the_epoch_and_holder_that_wrote_it(
    o41_env: Env, o41_api: Client
) -> None:
    """Two relaunches after the writer: each ``resume_from`` carries the writer's epoch and
    holder (not the resuming open's), exactly as ``versions/read`` and the list say."""
    name = o41_env.artifact("resume-stored")
    locs = o41_env.topology.locations
    first = open_box(o41_api, name, "writer-a", locs[0])
    commit_ok(o41_api, first, V1, make_files({"m.bin": 40, "o.bin": 9}, 61), "OPEN-2.a")
    writer = open_box(o41_api, name, "writer-b", locs[1 % len(locs)], rule="OPEN-2.a")
    commit_ok(o41_api, writer, V2, make_files({"m.bin": 50}, 62), "OPEN-2.a")
    stored = _stored(expect_ok(o41_api.read(name, V2), "READ-1.a", f"read {V2}"))
    check_equal((stored["epoch"], stored["holder"]), (writer.epoch, "writer-b"), "API-1.b",
                f"epoch and holder of {V2} as read")
    listed = expect_ok(o41_api.list(name), "READ-1.c", "list")["versions"]
    check_equal([(v.get("version"), v.get("epoch"), v.get("holder")) for v in listed],
                [(V1, first.epoch, "writer-a"), (V2, writer.epoch, "writer-b")], "API-1.b",
                "epoch and holder of each listed version")
    for holder, place in (("relaunch-c", locs[2 % len(locs)]), ("relaunch-d", None)):
        box = open_box(o41_api, name, holder, place, rule="OPEN-2.a")
        resumed = box.opened.get("resume_from")
        check(isinstance(resumed, dict), "OPEN-2.a", f"open by {holder}: resume_from {resumed}")
        check_equal(_stored(resumed), stored, "API-1.b",
                    f"resume_from of the open by {holder} (epoch {box.epoch})")


@pytest.mark.rule("FORK-2.a", "API-1.b")
def test_a_forks_resume_from_is_the_source_version_as_stored(
    o41_env: Env, o41_api: Client
) -> None:
    """A fork's ``resume_from`` is the source's version: its ``artifact`` is the source, and
    every stored field is what ``versions/read`` of the source says."""
    source = o41_env.artifact("fork-stored-src")
    locs = o41_env.topology.locations
    box = open_box(o41_api, source, "src-box", locs[1 % len(locs)])
    commit_ok(o41_api, box, V1, make_files({"w.bin": 33}, 63), "FORK-2.a")
    commit_ok(o41_api, box, V2, make_files({"w.bin": 34}, 64), "FORK-2.a")
    stored = _stored(expect_ok(o41_api.read(source, V1), "READ-1.a", f"read {source} {V1}"))
    fork = open_box(o41_api, o41_env.artifact("fork-stored"), "fork-box", locs[0],
                    resume=f"o41://{source}/{V1}", rule="FORK-2.a")
    resumed = fork.opened.get("resume_from")
    check(isinstance(resumed, dict), "FORK-2.a", f"the fork's resume_from {resumed}")
    check_equal(_stored(resumed), stored, "FORK-2.a", "the fork's resume_from")


@pytest.mark.rule("API-1.e")
def test_artifact_created_at_stays_when_it_is_opened_again(
    o41_env: Env, o41_api: Client
) -> None:
    """``artifacts/read``'s ``created_at`` is when the artifact was made: relaunches,
    commits and a refused fresh open leave it where it was."""
    name = o41_env.artifact("created-stays")
    box = open_box(o41_api, name, "box-a")
    made = expect_ok(o41_api.artifact(name), "API-1.e", "artifacts/read")["created_at"]
    check(parse_time(made) is not None, "API-1.e", f"created_at {made!r} is no timestamp")
    commit_ok(o41_api, box, V1, make_files({"m": 8}, 65), "API-1.e")
    for holder in ("box-b", "box-c"):
        box = open_box(o41_api, name, holder, rule="API-1.e")
    o41_api.open(name, None, None, "box-fresh")  # refused: has_checkpoints (OPEN-3)
    commit_ok(o41_api, box, V3, make_files({"m": 8}, 66), "API-1.e")
    now = expect_ok(o41_api.artifact(name), "API-1.e", "artifacts/read")["created_at"]
    check_equal(parse_time(now), parse_time(made), "API-1.e",
                f"created_at of {name} after three opens and two commits ({made!r} -> {now!r})")
