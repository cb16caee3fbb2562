"""Usage to the byte and the cent (USAGE-1): exact bytes per route, exact prices by the cloud
the bytes leave (aws 0.09, gcp 0.12, azure 0.087 per GB out; 0.02 between regions), one
transfers row per direction, artifact, version, place and route, and the placements rows."""

from __future__ import annotations

import math
import secrets
from typing import Any

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import open_raw
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import DEFAULT_PRICES
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.model import price_per_gb
from conformance.names import edge_name
from conformance.rules import check
from conformance.rules import check_equal
from conformance.signatures import tampered_url

pytestmark = [pytest.mark.usage]

MB = 1_000_000


def _close(got: Any, want: float) -> bool:
    """Prices agree to 0.1% (room for rounding to a micro-dollar, not for a wrong price)."""
    return isinstance(got, int | float) and math.isclose(got, want, rel_tol=1e-3, abs_tol=1e-7)


def _prices(api: Client) -> dict:
    """The contract's price table: every implementation charges by it, whatever shape or
    values its reply's ``prices`` has (a reply consistent with its own off-table prices is
    still wrong)."""
    expect_ok(api.usage(), "USAGE-1.c", "usage")
    return DEFAULT_PRICES


def _usage(api: Client, name: str) -> dict:
    return expect_ok(api.usage(name), "USAGE-1.a", f"usage of {name}")


def _name(env: Env, slug: str) -> str:
    return edge_name(env.prefix, slug, secrets.token_hex(3))


def _route(usage: dict, route: str) -> dict:
    return (usage.get("routes") or {}).get(route) or {
        "write_bytes": 0,
        "read_bytes": 0,
        "cost_usd": 0,
    }


def _url(api: Client, name: str, place: Any, file: str = "m") -> str:
    body = expect_ok(api.read(name, urls=True, place=place), "READ-2.a", "read")
    return next(f["url"] for f in body["files"] if f["name"] == file)


@pytest.mark.rule("USAGE-1.b", "USAGE-1.c")
def test_reads_priced_by_the_cloud_they_leave(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    prices = _prices(o41_api)
    for home in topo.locations:
        away = next((p for p in topo.locations if p.cloud != home.cloud), UNKNOWN_PLACE)
        near = topo.other_region(home.cloud)
        name = _name(o41_env, f"price-{home.cloud}")
        commit_ok(
            o41_api,
            open_box(o41_api, name, "box-a", home),
            "step-00000001",
            make_files({"m": 2 * MB}),
        )
        for reader, gets in ((away, 2), (near, 1), (home, 1)):
            url = _url(o41_api, name, reader)
            for _ in range(gets):
                check_equal(o41_api.fetch(url).status, 200, "READ-2.a", f"GET from {reader}")
        usage = _usage(o41_api, name)
        want = {
            "cross_cloud": (4 * MB, 4 * MB / 1e9 * price_per_gb(prices, "read", home, away)),
            "inter_region": (2 * MB, 2 * MB / 1e9 * price_per_gb(prices, "read", home, near)),
            "local": (2 * MB, 0.0),
        }
        total = 0.0
        for route, (nbytes, cost) in want.items():
            row = _route(usage, route)
            check_equal(row.get("read_bytes"), nbytes, "USAGE-1.b", f"{route} read bytes of {home}")
            check(
                _close(row.get("cost_usd"), cost),
                "USAGE-1.c",
                f"{route} cost of {nbytes} bytes leaving {home.cloud}: {row.get('cost_usd')}, "
                f"expected {cost}",
            )
            total += cost
        check(
            _close(usage.get("total_cost_usd"), total),
            "USAGE-1.c",
            f"total_cost_usd {usage.get('total_cost_usd')}, expected {total}",
        )
    if o41_env.spawned:
        check_equal(prices, DEFAULT_PRICES, "USAGE-1.c", "the published price table")


@pytest.mark.rule("USAGE-1.a", "USAGE-1.c", "USAGE-1.e")
def test_writes_per_route_priced_by_the_box_cloud(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    prices = _prices(o41_api)
    home = topo.locations[0]
    cases: list[tuple[Place | None, str]] = [
        (home, "local"),
        (topo.other_region(home.cloud), "inter_region"),
        (UNKNOWN_PLACE, "cross_cloud"),
        (None, "cross_cloud"),
    ]
    for place, route in cases:
        name = _name(o41_env, f"wr{route}")
        a = open_box(o41_api, name, "box-a", place)
        sizes = []
        for step in (1, 2, 3):
            files = make_files({"m": MB + step, "o": 1000 * step}, step)
            commit_ok(o41_api, a, f"step-{step:08d}", files)
            sizes.append(sum(map(len, files.values())))
        # a relaunch from the same place, spelled otherwise, is the same place
        spelled = {"cloud": place.cloud.upper(), "region": place.region} if place else None
        b = expect_ok(open_raw(o41_api, name, "latest", spelled, "box-b"), "OPEN-2.a", "relaunch")
        files = make_files({"m": 7777}, 4)
        commit_ok(
            o41_api, Box("box-b", name, place, b["token"], b["epoch"], b), "step-00000004", files
        )
        sizes.append(7777)
        usage = _usage(o41_api, name)
        placement = topo.placement(place)
        cost = sum(sizes) / 1e9 * price_per_gb(prices, "write", placement.location, place)
        row = _route(usage, route)
        check_equal(row.get("write_bytes"), sum(sizes), "USAGE-1.a", f"{route} write bytes")
        check(
            _close(row.get("cost_usd"), cost),
            "USAGE-1.c",
            f"{route} write cost from {place}: {row.get('cost_usd')}, expected {cost}",
        )
        for other in {"local", "inter_region", "cross_cloud"} - {route}:
            check_equal(_route(usage, other).get("write_bytes"), 0, "USAGE-1.a", f"{other} writes")
        rows = [p for p in usage.get("placements") or [] if p.get("artifact", name) == name]
        if placement.kind == "local":
            check_equal(rows, [], "USAGE-1.e", "placements of a box writing into its own region")
            continue
        check_equal(
            [
                (
                    r.get("kind"),
                    Place.from_json(r.get("place")),
                    Place.from_json(r.get("location")),
                    r.get("route"),
                    r.get("versions"),
                    r.get("bytes"),
                )
                for r in rows
            ],
            [(placement.kind, place, placement.location, route, 4, sum(sizes))],
            "USAGE-1.e",
            f"placements of a box at {place} (two spellings, four versions)",
        )


@pytest.mark.rule("USAGE-1.b", "USAGE-1.d")
def test_transfers_one_row_per_version_place_and_route(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    home = topo.locations[0]
    away = next((p for p in topo.locations if p.cloud != home.cloud), UNKNOWN_PLACE)
    name = _name(o41_env, "rows")
    a = open_box(o41_api, name, "box-a", home)
    size = 100_003
    for step in (1, 2, 3):  # three files each: one write row per version, not per file
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": size, "a": 10, "b/c": 20}, step))
    url = _url(o41_api, name, away)
    step = -(-size // 8)
    for lo in range(0, size, step):  # eight ranged GETs of one file by one box
        check_equal(
            o41_api.fetch(url, byte_range=(lo, min(lo + step, size) - 1)).status,
            206,
            "READ-3.a",
            "range",
        )
    check_equal(o41_api.fetch(url, byte_range=(7, 7)).status, 206, "READ-3.a", "one byte")
    overlong = o41_api.fetch(url, byte_range=(size - 5, size + 100))
    check_equal((overlong.status, len(overlong.content)), (206, 5), "READ-3.a", "range past end")
    check_equal(o41_api.fetch(url, method="HEAD").status, 200, "READ-3.a", "HEAD")
    check_equal(o41_api.fetch(url, byte_range=(size, size)).status, 416, "READ-3.b", "416")
    check_equal(o41_api.fetch(tampered_url(o41_api.absolute(url))).status, 403, "READ-4.b", "403")
    upper = f"{away.cloud.upper()}/{away.region}"
    check_equal(o41_api.fetch(_url(o41_api, name, upper)).status, 200, "READ-2.a", "GET, upper")
    body = expect_ok(o41_api.read(name, "step-00000001", urls=True, place=away), "READ-2.a", "v1")
    check_equal(
        o41_api.fetch(_file_url(body, "m"), byte_range=(0, 9)).status, 206, "READ-3.a", "v1"
    )
    body = expect_ok(o41_api.read(name, "step-00000003", urls=True, place=home), "READ-2.a", "home")
    check_equal(o41_api.fetch(_file_url(body, "m")).status, 200, "READ-2.a", "local GET")
    rows = [r for r in _usage(o41_api, name).get("transfers") or [] if r.get("artifact") == name]
    reads = sorted(
        (r.get("version"), str(Place.from_json(r.get("place"))), r.get("route"), r.get("bytes"))
        for r in rows
        if r.get("direction") == "read"
    )
    want = sorted(
        [
            ("step-00000003", str(away), "cross_cloud", size + 1 + 5 + size),
            ("step-00000001", str(away), "cross_cloud", 10),
            ("step-00000003", str(home), "local", size),
        ]
    )
    check_equal(reads, want, "USAGE-1.d", "read rows (direction, version, place, route, bytes)")
    writes = sorted(
        (r.get("version"), r.get("route"), r.get("bytes"))
        for r in rows
        if r.get("direction") == "write"
    )
    check_equal(
        writes,
        [(f"step-{s:08d}", "local", size + 30) for s in (1, 2, 3)],
        "USAGE-1.d",
        "write rows, one per version",
    )


def _file_url(version: dict, name: str) -> str:
    return next(f["url"] for f in version["files"] if f["name"] == name)
