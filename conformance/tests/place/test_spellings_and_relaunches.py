"""PLACE-1..4 and XC-1 beyond the first open of a fresh artifact: clouds spelled with
capitals (as SkyPilot spells them), relaunches, later writes, every cloud, older versions
read from elsewhere, and reads with URLs or without a place."""

from __future__ import annotations

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import two_clouds
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.model import route_between
from conformance.rules import check
from conformance.rules import check_equal
from conformance.rules import rule_of
from conformance.rules import unknown_rules


def clause(cid: str) -> pytest.MarkDecorator:
    """Tag a test with its clause id where the contract's ids know clauses, else its rule."""
    return pytest.mark.rule(cid if not unknown_rules([cid]) else rule_of(cid))


def _open(api: Client, artifact: str, holder: str, cloud: str | None, region: str = "",
          rule: str = "PLACE-1") -> Box:
    """Open with the place spelled exactly as given (``cloud`` None: no place)."""
    place = {"cloud": cloud, "region": region} if cloud is not None else None
    body = expect_ok(
        api.call("POST", "/artifacts/open",
                 body={"artifact": artifact, "resume": "latest", "place": place,
                       "holder": holder}),
        rule,
        f"open by {holder} from {place}",
    )
    return Box(holder, artifact, None, body["token"], body["epoch"], body)


def _write_location(box: Box) -> tuple[Place | None, str | None]:
    wl = box.opened.get("write_location") or {}
    return (Place.from_json(wl) if wl.get("cloud") else None), wl.get("route")


def _write_reply(api: Client, box: Box, version: str, rule: str) -> tuple[Place | None, str]:
    specs = [f.as_json() for f in file_specs(make_files({"m": 4}))]
    body = expect_ok(api.write(box.artifact, box.token, version, specs), rule, f"write {version}")
    return Place.from_json(body.get("location")), body.get("route")


def _names(warnings: list, place: Place) -> bool:
    return any(f"{place.cloud}/{place.region}" in str(w) for w in warnings)


@clause("PLACE-1.a")
def test_write_local_when_cloud_spelled_with_capitals(o41_env: Env, o41_api: Client) -> None:
    for loc in o41_env.topology.locations:
        a = _open(o41_api, o41_env.artifact("place1-caps"), "box-a", loc.cloud.upper(),
                  loc.region)
        check_equal(_write_location(a), (loc, "local"), "PLACE-1",
                    f"write_location of a box at {loc.cloud.upper()}/{loc.region}")
        check_equal(_write_reply(o41_api, a, "step-00000001", "PLACE-1"), (loc, "local"),
                    "PLACE-1", "write reply")


@clause("PLACE-1.a")
def test_every_later_write_of_a_local_box_stays_local(o41_env: Env, o41_api: Client) -> None:
    loc = o41_env.topology.locations[0]
    a = open_box(o41_api, o41_env.artifact("place1-later"), "box-a", loc)
    for step in (1, 2, 3):
        check_equal(_write_reply(o41_api, a, f"step-{step:08d}", "PLACE-1"), (loc, "local"),
                    "PLACE-1", f"write reply of step {step}")
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 4}, step), rule="PLACE-1")


@clause("PLACE-2.a")
@clause("PLACE-2.b")
@pytest.mark.parametrize("spelling", [str.lower, str.upper], ids=["lower", "capitals"])
def test_every_cloud_default_with_warning_in_open_and_writes(
    o41_env: Env, o41_api: Client, spelling
) -> None:  # noqa: ANN001
    topo = o41_env.topology
    for cloud in topo.clouds:
        place, default = topo.other_region(cloud), topo.default_for(cloud)
        a = _open(o41_api, o41_env.artifact("place2"), "box-a", spelling(cloud), place.region,
                  rule="PLACE-2")
        check_equal(_write_location(a), (default, "inter_region"), "PLACE-2",
                    f"write_location of a box at {spelling(cloud)}/{place.region}")
        check(a.opened.get("warnings"), "PLACE-2", f"no warning at {place}")
        check_equal(_write_reply(o41_api, a, "step-00000001", "PLACE-2"),
                    (default, "inter_region"), "PLACE-2", f"write reply at {place}")


@clause("PLACE-2.a")
@clause("PLACE-2.b")
@clause("PLACE-3.a")
@clause("PLACE-3.b")
@pytest.mark.parametrize("kind", ["default", "fallback", "no-place"])
def test_relaunch_keeps_placement_route_and_warning(
    o41_env: Env, o41_api: Client, kind: str
) -> None:
    topo = o41_env.topology
    place = {"default": topo.other_region(topo.clouds[-1]), "fallback": UNKNOWN_PLACE,
             "no-place": None}[kind]
    want = topo.placement(place)
    rule = "PLACE-2" if kind == "default" else "PLACE-3"
    name = o41_env.artifact("relaunch")
    a = open_box(o41_api, name, "box-a", place, rule=rule)
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 10}), rule=rule)
    b = open_box(o41_api, name, "box-b", place, rule=rule)
    check(b.opened.get("resume_from"), "OPEN-2", "the relaunch resumed nothing")
    check_equal(_write_location(b), (want.location, want.route), rule, "relaunch write_location")
    warnings = b.opened.get("warnings") or []
    check(warnings, rule, f"no warning on the relaunch from {place}")
    if kind != "default":
        check(_names(warnings, topo.fallback), rule, f"warning names no fallback: {warnings}")
    check_equal(_write_reply(o41_api, b, "step-00000002", rule), (want.location, want.route),
                rule, "relaunch's write reply")


@clause("PLACE-4.a")
def test_version_locations_stay_when_read_from_elsewhere_and_listed(
    o41_env: Env, o41_api: Client
) -> None:
    topo = o41_env.topology
    name = o41_env.artifact("place4")
    homes = [topo.locations[i % len(topo.locations)] for i in range(3)]
    for step, home in enumerate(homes, 1):
        box = open_box(o41_api, name, f"box-{step}", home, rule="OPEN-2")
        commit_ok(o41_api, box, f"step-{step:08d}", make_files({"m": 10}, step))
    listed = expect_ok(o41_api.list(name), "READ-1", "list")["versions"]
    check_equal([Place.from_json(v["location"]) for v in listed], homes, "PLACE-4", "list")
    for step, home in enumerate(homes, 1):
        for reader in [*topo.locations, UNKNOWN_PLACE]:
            body = expect_ok(o41_api.read(name, f"step-{step:08d}", place=reader), "XC-1",
                             "read")
            check_equal(Place.from_json(body.get("location")), home, "PLACE-4",
                        f"location of step {step} read from {reader}")


@clause("XC-1.a")
@clause("XC-1.b")
def test_read_marks_follow_cloud_not_spelling_urls_or_name(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    home = topo.locations[0]
    a = open_box(o41_api, o41_env.artifact("xc1"), "box-a", home)
    for step in (1, 2):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 10}, step))
    readers = [home, topo.other_region(home.cloud), *topo.locations[1:], UNKNOWN_PLACE,
               Place("lambda", home.region)]
    for reader in readers:
        route = route_between(home, reader)
        for spelled in {f"{reader.cloud}/{reader.region}",
                        f"{reader.cloud.upper()}/{reader.region}"}:
            for version in ("latest", "step-00000001"):
                for urls in (False, True):
                    body = expect_ok(o41_api.read(a.artifact, version, urls=urls, place=spelled),
                                     "XC-1", "read")
                    check_equal(
                        (body.get("route"), body.get("cross_cloud")),
                        (route, route == "cross_cloud"),
                        "XC-1",
                        f"read of {version} at {home} from {spelled} (urls={urls})",
                    )


@clause("XC-1.a")
def test_resume_after_a_hop_marked_cross_cloud_with_many_versions(
    o41_env: Env, o41_api: Client
) -> None:
    topo = two_clouds(o41_env)
    home = topo.locations[0]
    away = next(p for p in topo.locations if p.cloud != home.cloud)
    a = open_box(o41_api, o41_env.artifact("xc1-hop"), "box-a", home)
    for step in (1, 2, 3):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 10}, step))
    b = open_box(o41_api, a.artifact, "box-b", away, rule="OPEN-2")
    resume = b.opened.get("resume_from") or {}
    check_equal((resume.get("route"), resume.get("cross_cloud")), ("cross_cloud", True), "XC-1",
                f"resume_from at {away} of step 3 at {home}")


@clause("XC-1.c")
def test_reads_and_resumes_without_place_have_null_marks(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("xc1c"), "box-a", o41_env.topology.locations[0])
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 10}))
    for version in ("latest", "step-00000001"):
        for urls in (False, True):
            body = expect_ok(o41_api.read(a.artifact, version, urls=urls), "XC-1", "read")
            check_equal((body.get("route"), body.get("cross_cloud")), (None, None), "XC-1",
                        f"read of {version} without a place (urls={urls})")
    b = open_box(o41_api, a.artifact, "box-b", None, rule="OPEN-2")
    resume = b.opened.get("resume_from") or {}
    check_equal((resume.get("route"), resume.get("cross_cloud")), (None, None), "XC-1",
                "resume_from of an open without a place")
