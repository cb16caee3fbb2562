"""Resumes and reads where shallow tests do not look: a relaunch in another region of the
version's cloud is ``inter_region`` and NOT cross-cloud (XC-1), and a reader in a cloud the
target has never heard of pays for the bytes by the cloud they leave, the version's
location's, not by "any other cloud" (USAGE-1.c), in each cloud of the target."""

from __future__ import annotations

import pytest

from conformance.actions import a_version_in_each_cloud
from conformance.actions import download
from conformance.actions import open_raw
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import DEFAULT_PRICES
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.model import price_per_gb
from conformance.rules import check
from conformance.rules import check_equal
from conformance.usage import close


@pytest.mark.rule("XC-1.a", "XC-1.b", "OPEN-2.a")
def test_a_resume_in_another_region_of_the_cloud_is_inter_region_and_not_cross_cloud(
    o41_env: Env, o41_api: Client
) -> None:
    """For a version in each cloud's default location: a relaunch in another region of that
    cloud, at the location itself, and in another cloud; the flag is the boolean, not null."""
    topo = o41_env.topology
    for cloud, home, name in a_version_in_each_cloud(
            o41_env, o41_api, "xc", {"m": 64}, 100, "XC-1.a"):
        elsewhere = next((p for p in topo.locations if p.cloud != cloud), UNKNOWN_PLACE)
        for place, route, crossing in ((topo.other_region(cloud), "inter_region", False),
                                       (home, "local", False),
                                       (elsewhere, "cross_cloud", True)):
            opened = expect_ok(o41_api.open(name, "latest", place, f"box-{place.region}"),
                               "XC-1.a", f"relaunch at {place}")
            resume = opened.get("resume_from") or {}
            check_equal((resume.get("route"), resume.get("cross_cloud")), (route, crossing),
                        "XC-1.a", f"route and cross_cloud of resume_from at {place} "
                        f"(version in {home})")
            check(resume.get("cross_cloud") is crossing, "XC-1.a",
                  f"cross_cloud of resume_from at {place} is {resume.get('cross_cloud')!r}")
            read = expect_ok(o41_api.read(name, "latest", place=place), "XC-1.a",
                             f"read from {place}")
            check_equal((read.get("route"), read.get("cross_cloud")), (route, crossing),
                        "XC-1.a", f"route and cross_cloud of a read from {place}")


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.c", "USAGE-1.b")
def test_a_reader_in_an_unknown_cloud_pays_by_the_cloud_the_bytes_leave(
    o41_env: Env, o41_api: Client
) -> None:
    size = 4_000_000
    for _cloud, home, name in a_version_in_each_cloud(
            o41_env, o41_api, "price", {"m": size}, 101, "USAGE-1.c"):
        body = expect_ok(o41_api.read(name, urls=True, place=UNKNOWN_PLACE), "USAGE-1.b",
                         f"read from {UNKNOWN_PLACE}")
        download(o41_api, body)
        usage = expect_ok(o41_api.usage(name), "USAGE-1.c", "usage/read")
        rows = [t for t in usage.get("transfers") or [] if t.get("direction") == "read"
                and t.get("artifact", name) == name
                and Place.from_json(t.get("place")) == UNKNOWN_PLACE]
        check_equal([(r.get("route"), r.get("bytes")) for r in rows], [("cross_cloud", size)],
                    "USAGE-1.b", f"read rows from {UNKNOWN_PLACE} of a version in {home}")
        want = size / 1e9 * price_per_gb(DEFAULT_PRICES, "read", home, UNKNOWN_PLACE)
        got = float(rows[0].get("cost_usd") or 0.0)
        check(close(got, want), "USAGE-1.c",
              f"a read of {size} bytes of {home} from {UNKNOWN_PLACE} costs {got}, not "
              f"{want} (the price of {home.cloud}, the cloud the bytes leave)")


@pytest.mark.fallback
@pytest.mark.rule("XC-1.a", "XC-1.b")
def test_a_resume_from_a_cloud_the_target_does_not_know_is_cross_cloud(
    o41_env: Env, o41_api: Client
) -> None:
    """A relaunch from a place in no cloud of the target has a place all the same: its
    ``resume_from`` is ``cross_cloud`` (true), never the nulls of a box without a place."""
    for _cloud, home, name in a_version_in_each_cloud(
            o41_env, o41_api, "xc-unknown", {"m": 32}, 102, "XC-1.a"):
        opened = expect_ok(o41_api.open(name, "latest", UNKNOWN_PLACE, "box-u"), "XC-1.a",
                           f"relaunch at {UNKNOWN_PLACE}")
        resume = opened.get("resume_from") or {}
        check_equal((resume.get("route"), resume.get("cross_cloud")), ("cross_cloud", True),
                    "XC-1.a", f"route and cross_cloud of resume_from at {UNKNOWN_PLACE} "
                    f"(version in {home})")


@pytest.mark.rule("XC-1.a", "XC-1.b")
def test_a_resume_from_a_capitalised_cloud_has_the_route_of_its_cloud(
    o41_env: Env, o41_api: Client
) -> None:
    """Clouds compare case-insensitively (SkyPilot says ``GCP``): a relaunch at
    ``GCP/<another region>`` of a gcp version resumes ``inter_region``, not cross-cloud,
    and one at the location itself spelled so resumes ``local``."""
    topo = o41_env.topology
    for cloud, home, name in a_version_in_each_cloud(
            o41_env, o41_api, "xc-case", {"m": 32}, 103, "XC-1.b"):
        for region, route in ((topo.other_region(cloud).region, "inter_region"),
                              (home.region, "local")):
            spelled = {"cloud": cloud.upper(), "region": region}
            opened = expect_ok(open_raw(o41_api, name, "latest", spelled, "box-u"), "XC-1.b",
                               f"relaunch at {spelled}")
            resume = opened.get("resume_from") or {}
            check_equal((resume.get("route"), resume.get("cross_cloud")), (route, False),
                        "XC-1.b", f"route and cross_cloud of resume_from at {spelled} "
                        f"(version in {home})")
