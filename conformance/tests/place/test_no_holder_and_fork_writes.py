"""Placement, routes and usage that are right in the common case and easy to get wrong in a
rarer one: a box that gives no holder id, a fork's own writes. Each test here killed a
subtle mutant
(``conformance/mutants/m_place.py`` and others) the rest of the suite missed."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import two_clouds
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.rules import check_equal


@pytest.mark.rule("PLACE-1.a")
def test_local_box_without_holder_id_writes_locally(o41_env: Env, o41_api: Client) -> None:
    """PLACE-1.a: the holder id is optional and has nothing to do with placement: a box at
    each location's own place, giving no holder, is told route local to that location."""
    for home in o41_env.topology.locations:
        name = o41_env.artifact(f"no-holder-{home.cloud}")
        body = expect_ok(o41_api.open(name, "latest", home), "PLACE-1", f"open at {home}")
        wl = body.get("write_location") or {}
        check_equal(
            (Place.from_json(wl), wl.get("route")),
            (home, "local"),
            "PLACE-1",
            f"write_location of a box at {home} without a holder",
        )


@pytest.mark.rule("USAGE-1.a", "XC-1.a")
def test_fork_in_another_cloud_reads_cross_cloud_and_its_writes_count(
    o41_env: Env, o41_api: Client
) -> None:
    """XC-1.a: a fork opened in another cloud than the source version resumes it with
    cross_cloud true; USAGE-1.a: what the fork's own box writes counts in the fork's usage."""
    topo = two_clouds(o41_env)
    home, away = (
        topo.locations[0],
        next(p for p in topo.locations if p.cloud != topo.locations[0].cloud),
    )
    source = o41_env.artifact("xc-fork-src")
    commit_ok(
        o41_api,
        open_box(o41_api, source, "src-box", home),
        "step-00000001",
        make_files({"m.bin": 500}, 1),
    )
    fork = o41_env.artifact("xc-fork")
    box = open_box(
        o41_api, fork, "fork-box", away, resume=f"o41://{source}/step-00000001", rule="FORK-2"
    )
    resumed = box.opened.get("resume_from") or {}
    check_equal(
        (resumed.get("cross_cloud"), resumed.get("route")),
        (True, "cross_cloud"),
        "XC-1",
        f"resume_from of a {home} version by a fork at {away}",
    )
    files = make_files({"m.bin": 1234, "o.bin": 66}, 2)
    commit_ok(o41_api, box, "step-00000002", files)
    usage = expect_ok(o41_api.usage(fork), "USAGE-1", "usage of the fork")
    wrote = sum(
        r.get("bytes", 0)
        for r in usage.get("transfers", [])
        if r.get("direction") == "write" and r.get("version") == "step-00000002"
    )
    check_equal(wrote, 1300, "USAGE-1", "write bytes of the fork's own version")
    per_route = sum(int(v.get("write_bytes") or 0) for v in (usage.get("routes") or {}).values())
    check_equal(per_route, 1300, "USAGE-1", "write_bytes of the fork's routes")


@pytest.mark.rule("USAGE-1.e")
def test_default_placement_listed_for_a_box_of_every_cloud(o41_env: Env, o41_api: Client) -> None:
    """USAGE-1.e: a box in another region of each cloud writes to that cloud's default
    location; placements lists a ``default`` row for each, with its versions and bytes."""
    topo = o41_env.topology
    for cloud in topo.clouds:
        place = topo.other_region(cloud)
        name = o41_env.artifact(f"default-{cloud}")
        box = open_box(o41_api, name, "box-a", place)
        commit_ok(o41_api, box, "step-00000001", make_files({"m.bin": 777}, 1))
        usage = expect_ok(o41_api.usage(name), "USAGE-1", f"usage of {name}")
        rows = [
            p
            for p in usage.get("placements") or []
            if p.get("kind") == "default" and Place.from_json(p.get("place")) == place
        ]
        check_equal(len(rows), 1, "USAGE-1", f"default placement rows of a box at {place}")
        got = rows[0]
        count = got.get("versions")
        count = len(count) if isinstance(count, list) else count
        check_equal(
            (Place.from_json(got.get("location")), count, got.get("bytes")),
            (topo.placement(place).location, 1, 777),
            "USAGE-1",
            f"default placement of a box at {place}",
        )
