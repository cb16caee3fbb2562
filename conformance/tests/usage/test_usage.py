"""Usage and cost (USAGE-1), an optional capability: skipped when the target has none."""

from __future__ import annotations

from functools import partial

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import DEFAULT_PRICES
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.rules import check
from conformance.rules import check_equal
from conformance.signatures import tampered_url
from conformance.usage import UsageModel

pytestmark = [pytest.mark.usage]


def _usage(api: Client, artifact: str) -> dict:
    return expect_ok(api.usage(artifact), "USAGE-1", f"usage of {artifact}")


def _model(body: dict) -> UsageModel:
    # The contract's table, not the reply's `prices` (its shape is open; its values are not).
    return UsageModel(prices=DEFAULT_PRICES)


@pytest.mark.rule("USAGE-1.a", "USAGE-1.b", "USAGE-1.c", "USAGE-1.d")
def test_usage_counts_writes_and_ranged_reads_per_route(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    home = topo.locations[0]
    readers = [p for p in topo.locations if p.cloud != home.cloud][:1] + [UNKNOWN_PLACE]
    readers += [topo.other_region(home.cloud), None]  # no place: billed as cross_cloud
    name = o41_env.artifact("usage")
    model = _model(expect_ok(o41_api.usage(), "USAGE-1", "usage"))
    a = open_box(o41_api, name, "box-a", home)
    files = make_files({"model.pt": 1_000_003, "meta.json": 17}, 5)
    commit_ok(o41_api, a, "step-00000001", files)
    model.put(name, home, home, sum(map(len, files.values()))).settled = True
    for reader in readers:
        body = expect_ok(o41_api.read(name, urls=True, place=reader), "READ-2", "read")
        download(o41_api, body, parts=8)
        model.read(name, home, reader, sum(map(len, files.values())))
    body = expect_ok(o41_api.read(name, urls=True, place=readers[0]), "READ-2", "read")
    url = next(f["url"] for f in body["files"] if f["name"] == "model.pt")
    check_equal(o41_api.fetch(url, byte_range=(100, 199)).status, 206, "READ-3", "range")
    model.read(name, home, readers[0], 100)
    check_equal(
        o41_api.fetch(url, byte_range=(2_000_000, 2_000_009)).status,
        416,
        "READ-3",
        "range past the end",
    )
    usage = model.check_settled(name, lambda: _usage(o41_api, name))
    rows = [
        t
        for t in usage.get("transfers", [])
        if t.get("artifact") == name
        and t.get("direction") == "read"
        and Place.from_json(t.get("place")) == readers[0]
    ]
    check_equal(len(rows), 1, "USAGE-1", f"read rows of one version and place: {rows}")
    check_equal(rows[0]["bytes"], 1_000_003 + 17 + 100, "USAGE-1", "bytes of the read row")


@pytest.mark.rule("USAGE-1.a", "USAGE-1.c", "USAGE-1.e")
def test_usage_prices_writes_by_the_box_cloud_and_lists_placements(
    o41_env: Env, o41_api: Client
) -> None:
    topo = o41_env.topology
    model = _model(expect_ok(o41_api.usage(), "USAGE-1", "usage"))
    for place in (topo.other_region(topo.clouds[0]), UNKNOWN_PLACE):
        name = o41_env.artifact("usage-w")
        a = open_box(o41_api, name, "box-a", place)
        files = make_files({"m": 1_500_000, "o": 500_000}, 1)
        commit_ok(o41_api, a, "step-00000001", files)
        placement = topo.placement(place)
        model.put(name, placement.location, place, 2_000_000).settled = True
        usage = model.check_settled(name, partial(_usage, o41_api, name))
        rows = [
            t
            for t in usage.get("transfers", [])
            if t.get("direction") == "write" and t.get("artifact") == name
        ]
        check_equal(
            [(r.get("version"), r.get("route"), r.get("bytes")) for r in rows],
            [("step-00000001", placement.route, 2_000_000)],
            "USAGE-1",
            f"write transfer rows from {place}",
        )
        kinds = [
            p.get("kind")
            for p in usage.get("placements", [])
            if Place.from_json(p.get("place")) == place
        ]
        check_equal(kinds, [placement.kind], "USAGE-1", f"placements of a box at {place}")


@pytest.mark.rule("USAGE-1.e")
def test_usage_lists_fallback_placements(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("usage-fb")
    a = open_box(o41_api, name, "box-a", UNKNOWN_PLACE)
    for step in (1, 2):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 1000}, step))
    rows = _usage(o41_api, name).get("placements", [])
    fallback = o41_env.topology.fallback
    hits = [
        r
        for r in rows
        if r.get("kind") == "fallback"
        and Place.from_json(r.get("place")) == UNKNOWN_PLACE
        and Place.from_json(r.get("location")) == fallback
    ]
    check(hits, "USAGE-1", f"no fallback placement {UNKNOWN_PLACE} -> {fallback} in {rows}")
    check_equal(
        (hits[0].get("route"), hits[0].get("versions"), hits[0].get("bytes")),
        ("cross_cloud", 2, 2000),
        "USAGE-1",
        "the fallback placement row",
    )


@pytest.mark.rule("USAGE-1.b")
def test_usage_counts_no_bytes_for_refused_or_bodiless_gets(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("usage-0")
    a = open_box(o41_api, name, "box-a", o41_env.topology.locations[0])
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 500}))
    body = expect_ok(o41_api.read(name, urls=True, place=UNKNOWN_PLACE), "READ-2", "read")
    url = o41_api.absolute(body["files"][0]["url"])
    check_equal(o41_api.fetch(tampered_url(url)).status, 403, "READ-4", "tampered GET")
    check_equal(o41_api.fetch(url, byte_range=(500, 600)).status, 416, "READ-3", "416 GET")
    check_equal(o41_api.fetch(url, method="HEAD").status, 200, "READ-3", "HEAD")
    usage = _usage(o41_api, name)
    for route, row in (usage.get("routes") or {}).items():
        check_equal(row.get("read_bytes", 0), 0, "USAGE-1", f"{route} bytes served")


@pytest.mark.rule("USAGE-1.c")
def test_usage_prices_match_published_table(o41_env: Env, o41_api: Client) -> None:
    if not o41_env.spawned:
        pytest.skip("a remote target may publish its own prices; checked with spawn only")
    prices = expect_ok(o41_api.usage(), "USAGE-1", "usage").get("prices")
    check_equal(prices, DEFAULT_PRICES, "USAGE-1", "prices of the default configuration")
