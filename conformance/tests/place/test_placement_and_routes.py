"""Where checkpoints land and how reads are marked (PLACE-1..4, XC-1)."""

from __future__ import annotations

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import two_clouds
from conformance.checks import expect_ok
from conformance.checks import expect_write_placed
from conformance.client import Client
from conformance.env import Env
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.model import route_between
from conformance.rules import check
from conformance.rules import check_equal

UNKNOWN = UNKNOWN_PLACE


def _write_location(body: dict) -> tuple[Place | None, str | None]:
    wl = body.get("write_location") or {}
    return Place.from_json(wl) if wl else None, wl.get("route")


def _names_fallback(warnings: list, fallback: Place) -> bool:
    return any(fallback.cloud in w and fallback.region in w for w in map(str, warnings))


def _expect_committed_at(api: Client, box: Box, where: Place | None, rule: str) -> None:
    """``step-00000001`` committed from ``box`` is stored at ``where`` (``rule``)."""
    version = commit_ok(api, box, "step-00000001", make_files({"m": 10}), rule=rule)
    check_equal(Place.from_json(version.get("location")), where, rule,
                "location of the committed version")


@pytest.mark.rule("PLACE-1.a")
def test_write_goes_local_when_place_has_location(o41_env: Env, o41_api: Client) -> None:
    for place in o41_env.topology.locations:
        a = open_box(o41_api, o41_env.artifact("place1"), "box-a", place)
        check_equal(
            _write_location(a.opened),
            (place, "local"),
            "PLACE-1",
            f"write_location of a box at {place}",
        )
        _expect_committed_at(o41_api, a, place, "PLACE-1")


@pytest.mark.rule("PLACE-2.a", "PLACE-2.b")
def test_write_goes_to_cloud_default_when_region_has_none(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    for cloud in topo.clouds:
        place = topo.other_region(cloud)
        a = open_box(o41_api, o41_env.artifact("place2"), "box-a", place)
        default = topo.default_for(cloud)
        check_equal(
            _write_location(a.opened),
            (default, "inter_region"),
            "PLACE-2",
            f"write_location of a box at {place}",
        )
        check(a.opened.get("warnings"), "PLACE-2", f"no warning for a box at {place}")
        _expect_committed_at(o41_api, a, default, "PLACE-2")


@pytest.mark.rule("PLACE-3.a", "PLACE-3.b")
@pytest.mark.fallback
@pytest.mark.parametrize("place", [UNKNOWN, Place("oci", "us-ashburn-1"), None], ids=str)
def test_write_goes_to_fallback_when_cloud_has_none(
    o41_env: Env, o41_api: Client, place: Place | None
) -> None:
    fallback = o41_env.topology.fallback
    a = open_box(o41_api, o41_env.artifact("place3"), "box-a", place)
    check_equal(
        _write_location(a.opened),
        (fallback, "cross_cloud"),
        "PLACE-3",
        f"write_location of a box at {place}",
    )
    check(
        _names_fallback(a.opened.get("warnings") or [], fallback),
        "PLACE-3",
        f"no warning naming {fallback}: {a.opened.get('warnings')}",
    )
    _expect_committed_at(o41_api, a, fallback, "PLACE-3")


@pytest.mark.rule("PLACE-1.a", "PLACE-2.a", "PLACE-3.a")
def test_write_response_reports_location_and_route(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    cases = [
        (topo.locations[0], "PLACE-1"),
        (topo.other_region(topo.clouds[0]), "PLACE-2"),
        (UNKNOWN, "PLACE-3"),
    ]
    for place, rule in cases:
        a = open_box(o41_api, o41_env.artifact("wresp"), "box-a", place)
        want = topo.placement(place)
        specs = [f.as_json() for f in file_specs(make_files({"m": 1}))]
        reply = o41_api.write(a.artifact, a.token, "step-00000001", specs)
        expect_write_placed(reply, want, rule, f"write from {place}",
                            f"write response from {place}")


@pytest.mark.rule("PLACE-4.a")
def test_version_location_unchanged_after_reads_and_relaunch(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    first, second = topo.locations[0], topo.locations[-1]
    name = o41_env.artifact("place4")
    a = open_box(o41_api, name, "box-a", first)
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 5000}))
    for reader in [*topo.locations, UNKNOWN]:
        body = expect_ok(
            o41_api.read(name, "step-00000001", urls=True, place=reader),
            "READ-2",
            f"read from {reader}",
        )
        download(o41_api, body, parts=2)
    b = open_box(o41_api, name, "box-b", second, rule="OPEN-2")
    commit_ok(o41_api, b, "step-00000002", make_files({"m": 10}))
    listed = expect_ok(o41_api.list(name), "READ-1", "list")["versions"]
    check_equal(
        [Place.from_json(v["location"]) for v in listed],
        [first, second],
        "PLACE-4",
        "locations of step 1 and step 2",
    )


@pytest.mark.rule("XC-1.a", "XC-1.b", "XC-1.c")
def test_read_cross_cloud_matches_reader_place(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    home = topo.locations[0]
    a = open_box(o41_api, o41_env.artifact("xc1"), "box-a", home)
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 10}))
    readers = [*topo.locations, *(topo.other_region(c) for c in topo.clouds), UNKNOWN]
    for reader in readers:
        body = expect_ok(o41_api.read(a.artifact, place=reader), "XC-1", f"read from {reader}")
        route = route_between(home, reader)
        check_equal(
            (body.get("route"), body.get("cross_cloud")),
            (route, route == "cross_cloud"),
            "XC-1",
            f"read of {home} from {reader}",
        )
    body = expect_ok(o41_api.read(a.artifact), "XC-1", "read without a place")
    check_equal(
        (body.get("route"), body.get("cross_cloud")),
        (None, None),
        "XC-1",
        "route and cross_cloud of a read without a place",
    )


@pytest.mark.rule("XC-1.a", "XC-1.b", "OPEN-2.b")
def test_open_resume_marked_cross_cloud_after_hop(o41_env: Env, o41_api: Client) -> None:
    topo = two_clouds(o41_env)
    home = topo.locations[0]
    away = next(p for p in topo.locations if p.cloud != home.cloud)
    a = open_box(o41_api, o41_env.artifact("hop"), "box-a", home)
    files = make_files({"model.pt": 300_000}, 9)
    commit_ok(o41_api, a, "step-00000500", files)
    b = open_box(o41_api, a.artifact, "box-b", away, rule="OPEN-2")
    resume = b.opened.get("resume_from") or {}
    check_equal(
        (resume.get("route"), resume.get("cross_cloud")),
        ("cross_cloud", True),
        "XC-1",
        f"resume_from of a box at {away} for a version at {home}",
    )
    check_equal(download(o41_api, resume, parts=8), files, "READ-3", "cross-cloud resume")
