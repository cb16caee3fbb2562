"""Placement and routes at their edges (PLACE-1..4, XC-1): both spellings of a cloud
("GCP" and "gcp" are the same place), a region name that exists only in another cloud,
relaunches from the same place, reads of older versions from everywhere."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import open_raw
from conformance.checks import expect_ok
from conformance.checks import expect_open_placed
from conformance.checks import expect_write_placed
from conformance.client import Client
from conformance.env import Env
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.model import Topology
from conformance.model import route_between
from conformance.names import edge_name
from conformance.rules import check
from conformance.rules import check_equal

KIND_CLAUSE = {"local": "PLACE-1.a", "default": "PLACE-2.a", "fallback": "PLACE-3.a"}


def _spellings(place: Place) -> list[dict[str, str]]:
    cloud = place.cloud
    return [
        {"cloud": cloud, "region": place.region},
        {"cloud": cloud.upper(), "region": place.region},
        {"cloud": cloud.capitalize(), "region": place.region},
    ]


def _tricky_places(topo: Topology) -> list[Place]:
    """Places whose placement a sloppy implementation gets wrong: every location, another
    region of every cloud, a location's region in another cloud, unknown clouds."""
    out = [*topo.locations, *(topo.other_region(c) for c in topo.clouds)]
    for loc in topo.locations:
        out += [Place(c, loc.region) for c in topo.clouds if c != loc.cloud][:1]
        out.append(Place(UNKNOWN_PLACE.cloud, loc.region))
    out.append(UNKNOWN_PLACE)
    return list(dict.fromkeys(out))


def _name(env: Env, slug: str) -> str:
    return edge_name(env.prefix, slug, secrets.token_hex(3))


def _check_placed(env: Env, api: Client, place: Place, spelling: dict) -> None:
    want = env.topology.placement(place)
    clause = KIND_CLAUSE[want.kind]
    name = _name(env, "pl")
    fb = env.topology.fallback
    for launch in (1, 2):  # the relaunch from the same place is placed the same way
        body = expect_ok(
            open_raw(api, name, "latest", spelling, f"box-{launch}"), clause, f"open {spelling}"
        )
        warned = "PLACE-3.b" if want.kind == "fallback" else "PLACE-2.b"
        expect_open_placed(body, want, fb, clause, warned, f"launch {launch} at {spelling}")
        files = make_files({"m": 10 + launch}, launch)
        specs = [f.as_json() for f in file_specs(files)]
        reply = api.write(name, body["token"], f"step-{launch:08d}", specs)
        wrote = expect_write_placed(reply, want, clause, f"write from {spelling}",
                                    f"write response of launch {launch} at {spelling}")
        for f in wrote["files"]:
            check(api.put(f["url"], files[f["name"]]).ok, clause, "PUT")
        done = expect_ok(api.commit(name, body["token"], wrote["upload"]), clause, "commit")
        check_equal(
            Place.from_json(done.get("location")),
            want.location,
            clause,
            f"location of the version committed by launch {launch} at {spelling}",
        )


@pytest.mark.rule("PLACE-1.a", "PLACE-2.a", "PLACE-2.b", "PLACE-3.a", "PLACE-3.b")
@pytest.mark.parametrize("spelling", [0, 1, 2], ids=["lower", "UPPER", "Capital"])
def test_placement_of_tricky_places_in_every_spelling(
    o41_env: Env, o41_api: Client, spelling: int
) -> None:
    topo = o41_env.topology
    places = _tricky_places(topo)
    if spelling:  # other spellings: the places a case-sensitive comparison gets wrong
        places = [*topo.locations, *(topo.other_region(c) for c in topo.clouds)]
    for place in places:
        _check_placed(o41_env, o41_api, place, _spellings(place)[spelling])


@pytest.mark.rule("PLACE-3.a", "PLACE-3.b")
def test_open_without_place_writes_to_the_fallback(o41_env: Env, o41_api: Client) -> None:
    fb = o41_env.topology.fallback
    name = _name(o41_env, "noplace")
    for launch in (1, 2):
        body = expect_ok(open_raw(o41_api, name, "latest", None), "PLACE-3.a", "open, no place")
        wl = body.get("write_location") or {}
        check_equal(
            (Place.from_json(wl) if wl else None, wl.get("route")),
            (fb, "cross_cloud"),
            "PLACE-3.a",
            f"write_location of launch {launch} without a place",
        )
        warnings = [str(w) for w in body.get("warnings") or []]
        check(
            any(fb.cloud in w and fb.region in w for w in warnings),
            "PLACE-3.b",
            f"launch {launch} without a place: no warning naming {fb}: {warnings}",
        )


@pytest.mark.rule("PLACE-4.a", "XC-1.a", "XC-1.b", "XC-1.c")
def test_routes_of_every_version_from_every_place(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    name = _name(o41_env, "xc")
    homes = list(topo.locations)
    for step, home in enumerate(homes, start=1):
        body = expect_ok(
            open_raw(o41_api, name, "latest", home.as_json(), f"b{step}"), "XC-1.a", "open"
        )
        if step > 1:
            resume = body.get("resume_from") or {}
            prev = homes[step - 2]
            route = route_between(prev, home)
            what = f"resume_from of a version at {prev} for a box at {home}"
            check_equal(resume.get("cross_cloud"), prev.cloud != home.cloud, "XC-1.a", what)
            check_equal(resume.get("route"), route, "XC-1.b", what)
        files = make_files({"m": 5}, step)
        up = o41_api.write(
            name, body["token"], f"step-{step:08d}", [f.as_json() for f in file_specs(files)]
        )
        wrote = expect_ok(up, "PLACE-1.a", "write")
        o41_api.put(wrote["files"][0]["url"], files["m"])
        expect_ok(o41_api.commit(name, body["token"], wrote["upload"]), "PLACE-1.a", "commit")
    readers = _tricky_places(topo)
    for step, home in enumerate(homes, start=1):
        version = f"step-{step:08d}"
        for reader in readers:
            upper = f"{reader.cloud.upper()}/{reader.region}"
            for text, urls in ((str(reader), False), (upper, True)):
                body = expect_ok(
                    o41_api.read(name, version, urls=urls, place=text),
                    "XC-1.b",
                    f"read from {text} (urls={urls})",
                )
                route = route_between(home, reader)
                check_equal(
                    body.get("cross_cloud"),
                    home.cloud != reader.cloud,
                    "XC-1.a",
                    f"cross_cloud of {version} at {home} read from {text}",
                )
                check_equal(
                    body.get("route"), route, "XC-1.b", f"route of {version} at {home} from {text}"
                )
                check_equal(
                    Place.from_json(body.get("location")),
                    home,
                    "PLACE-4.a",
                    f"location of {version} read from {text}",
                )
        for urls in (False, True):
            body = expect_ok(o41_api.read(name, version, urls=urls), "XC-1.c", "read, no place")
            check_equal(
                (body.get("route"), body.get("cross_cloud")),
                (None, None),
                "XC-1.c",
                f"route and cross_cloud of {version} read without a place (urls={urls})",
            )
    listed = expect_ok(o41_api.list(name), "PLACE-4.a", "list")["versions"]
    check_equal(
        [Place.from_json(v.get("location")) for v in listed],
        homes,
        "PLACE-4.a",
        "locations after reads from everywhere and relaunches",
    )
    body = expect_ok(open_raw(o41_api, name, "latest", None), "XC-1.c", "open without a place")
    resume = body.get("resume_from") or {}
    check_equal(
        (resume.get("route"), resume.get("cross_cloud")),
        (None, None),
        "XC-1.c",
        "resume_from of an open without a place",
    )
    late = open_box(o41_api, name, "box-late", UNKNOWN_PLACE, rule="OPEN-2.a")
    commit_ok(o41_api, late, "step-00000099", make_files({"m": 1}))
    listed = expect_ok(o41_api.list(name), "PLACE-4.a", "list")["versions"]
    check_equal(
        [Place.from_json(v.get("location")) for v in listed][: len(homes)],
        homes,
        "PLACE-4.a",
        "locations after a later write from elsewhere",
    )
