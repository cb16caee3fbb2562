"""READ-1.a and READ-1.c where a shallow test does not look: ``latest`` read from a place
whose cloud holds only older versions (the newest is elsewhere), and ``versions/list`` of
more versions than any first page holds."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal

#: More versions than a first page of 10, 20 or a power of two (16) would show.
MANY = 25


@pytest.mark.rule("READ-1.a")
def test_latest_is_the_highest_step_whatever_the_readers_place(
    o41_env: Env, o41_api: Client
) -> None:
    """Steps 1 and 2 are written in one cloud and step 3 in another: every reader, in
    either cloud, another region of it or an unknown place, gets step 3 as latest."""
    locs = o41_env.topology.locations
    clouds = o41_env.topology.clouds
    if len(clouds) < 2:
        pytest.skip("needs locations in two clouds (--places)")
    home = locs[0]
    away = next(p for p in locs if p.cloud != home.cloud)
    a = open_box(o41_api, o41_env.artifact("r1a-place"), "box-a", home)
    for step in (1, 2):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 64}, step))
    b = open_box(o41_api, a.artifact, "box-b", away)
    commit_ok(o41_api, b, "step-00000003", make_files({"m": 64}, 3))
    readers = [home, o41_env.topology.other_region(home.cloud), away,
               o41_env.topology.other_region(away.cloud), "nowhere-cloud/r-1", None]
    for place in readers:
        for version in ("latest", None):
            for urls in (False, True):
                body = expect_ok(o41_api.read(a.artifact, version, urls=urls, place=place),
                                 "READ-1.a", "read latest")
                check_equal(body.get("version"), "step-00000003", "READ-1.a",
                            f"latest read from {place} (version={version}, urls={urls}), "
                            f"step 3 being in {away.cloud} and steps 1-2 in {home.cloud}")
    c = open_box(o41_api, a.artifact, "box-c", home, rule="OPEN-2")
    check_equal((c.opened.get("resume_from") or {}).get("version"), "step-00000003", "READ-1.a",
                f"resume_from of an open in {home}")


@pytest.mark.rule("READ-1.c", "READ-1.a", "OPEN-2.a", "FORK-1.b", "FORK-2.a", "API-1.e")
def test_list_shows_every_version_beyond_a_first_page(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("r1c-many"), "box-a")
    names = [f"step-{3 * n + 1:08d}" for n in range(MANY)]
    for i, name in enumerate(names):
        commit_ok(o41_api, a, name, make_files({"m": 3}, i))
    reply = o41_api.list(a.artifact)
    listed = [v.get("version") for v in expect_ok(reply, "READ-1.c", "list")["versions"]]
    check_equal(listed, names, "READ-1.c", f"the {MANY} versions listed")
    steps = [v.get("step") for v in reply.body["versions"]]
    check(steps == sorted(steps), "READ-1.c", f"steps out of order: {steps}")
    state = expect_ok(o41_api.artifact(a.artifact), "API-1.e", "artifacts/read")
    check_equal((state.get("versions"), state.get("latest")), (MANY, names[-1]), "READ-1.c",
                "artifacts/read count and latest")
    for name in (names[0], names[10], names[-1]):
        check_equal(expect_ok(o41_api.read(a.artifact, name), "READ-1.c", "read")["version"],
                    name, "READ-1.c", f"read {name} of {MANY}")
    latest = expect_ok(o41_api.read(a.artifact), "READ-1.a", "read latest")
    check_equal(latest.get("version"), names[-1], "READ-1.a", f"latest of {MANY}")
    b = open_box(o41_api, a.artifact, "box-b", rule="OPEN-2")
    check_equal((b.opened.get("resume_from") or {}).get("version"), names[-1], "OPEN-2.a",
                f"resume_from of a relaunch after {MANY} versions")
    source = f"o41://{a.artifact}/{names[MANY - 5]}"
    fork = open_box(o41_api, o41_env.artifact("r1c-fork"), "box-f", resume=source, rule="FORK-1")
    check_equal((fork.opened.get("resume_from") or {}).get("version"), names[MANY - 5],
                "FORK-2.a", f"resume_from of a fork from the {MANY - 4}th of {MANY} versions")
