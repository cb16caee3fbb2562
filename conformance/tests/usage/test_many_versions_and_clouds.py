"""USAGE-1 beyond one checkpoint read once: several versions and clouds, range edges and
overlong ranges, every cloud's egress price, one row per version and place however the
place is spelled, and placements of boxes without a place."""

from __future__ import annotations

import math
from functools import partial

import pytest

from conformance.actions import a_box_and_a_reader_elsewhere
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import two_clouds
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import DEFAULT_PRICES
from conformance.model import UNKNOWN_PLACE
from conformance.model import Place
from conformance.model import price_per_gb
from conformance.rules import check
from conformance.rules import check_equal
from conformance.rules import rule_of
from conformance.rules import unknown_rules
from conformance.usage import UsageModel

pytestmark = [pytest.mark.usage]


def clause(cid: str) -> pytest.MarkDecorator:
    """Tag a test with its clause id where the contract's ids know clauses, else its rule."""
    return pytest.mark.rule(cid if not unknown_rules([cid]) else rule_of(cid))


def _usage(api: Client, artifact: str) -> dict:
    return expect_ok(api.usage(artifact), "USAGE-1", f"usage of {artifact}")


def _model(api: Client) -> UsageModel:
    expect_ok(api.usage(), "USAGE-1", "usage")
    return UsageModel(prices=DEFAULT_PRICES)  # the contract's table, not what is published


def _size(files: dict[str, bytes]) -> int:
    return sum(map(len, files.values()))


@clause("USAGE-1.a")
def test_usage_counts_every_version_written_from_every_cloud(
    o41_env: Env, o41_api: Client
) -> None:
    topo = o41_env.topology
    model = _model(o41_api)
    for cloud in topo.clouds:
        place = topo.other_region(cloud)
        name = o41_env.artifact(f"usage-a-{cloud}")
        a = open_box(o41_api, name, "box-a", place)
        for step in (1, 2):
            files = make_files({"m": 40_000 * step, "o": 7}, step)
            commit_ok(o41_api, a, f"step-{step:08d}", files)
            model.put(name, topo.placement(place).location, place, _size(files)).settled = True
        model.check_settled(name, partial(_usage, o41_api, name))


@clause("USAGE-1.b")
def test_usage_counts_bytes_sent_at_range_edges_and_past_the_end(
    o41_env: Env, o41_api: Client
) -> None:
    home = o41_env.topology.locations[0]
    name = o41_env.artifact("usage-b")
    model = _model(o41_api)
    a = open_box(o41_api, name, "box-a", home)
    files = make_files({"m": 5000}, 2)
    commit_ok(o41_api, a, "step-00000001", files)
    model.put(name, home, home, 5000).settled = True
    body = expect_ok(o41_api.read(name, urls=True, place=UNKNOWN_PLACE), "READ-2", "read")
    url = body["files"][0]["url"]
    for lo, hi, sent in ((0, 0, 1), (10, 19, 10), (4990, 9000, 10), (4999, 4999, 1)):
        res = o41_api.fetch(url, byte_range=(lo, hi))
        check_equal((res.status, len(res.content)), (206, sent), "READ-3", f"bytes={lo}-{hi}")
        model.read(name, home, UNKNOWN_PLACE, sent)
    check_equal(o41_api.fetch(url, method="HEAD").status, 200, "READ-3", "HEAD")
    check_equal(o41_api.fetch(url, byte_range=(6000, 6001)).status, 416, "READ-3", "416")
    model.check_settled(name, partial(_usage, o41_api, name))


@clause("USAGE-1.c")
def test_usage_prices_egress_of_every_cloud_and_totals_all_routes(
    o41_env: Env, o41_api: Client
) -> None:
    topo = two_clouds(o41_env)
    model = _model(o41_api)
    for home in topo.locations:
        reader = next(p for p in topo.locations if p.cloud != home.cloud)
        name = o41_env.artifact(f"usage-c-{home.cloud}")
        a = open_box(o41_api, name, "box-a", home)
        files = make_files({"m": 300_000}, 3)
        commit_ok(o41_api, a, "step-00000001", files)
        model.put(name, home, home, _size(files)).settled = True
        away = topo.other_region(home.cloud)
        b = open_box(o41_api, name, "box-b", away, rule="OPEN-2")
        more = make_files({"m": 200_000}, 4)
        commit_ok(o41_api, b, "step-00000002", more)
        model.put(name, topo.placement(away).location, away, _size(more)).settled = True
        body = expect_ok(o41_api.read(name, "step-00000001", urls=True, place=reader),
                         "READ-2", "read")
        download(o41_api, body)
        model.read(name, home, reader, _size(files))
        usage = model.check_settled(name, partial(_usage, o41_api, name))
        for row in usage.get("transfers", []):
            location, place = Place.from_json(row["location"]), Place.from_json(row["place"])
            per_gb = price_per_gb(model.prices, row["direction"], location, place)
            check(
                math.isclose(row["cost_usd"], row["bytes"] * per_gb / 1e9, rel_tol=1e-6),
                "USAGE-1",
                f"{row['direction']} row {location} <- {place}: {row['bytes']} bytes cost "
                f"{row['cost_usd']}, not {per_gb}/GB",
            )


def _rows(usage: dict, direction: str, place: Place | None = None) -> list[dict]:
    return [
        r for r in usage.get("transfers", [])
        if r.get("direction") == direction
        and (place is None or Place.from_json(r.get("place")) == place)
    ]


@clause("USAGE-1.d")
def test_usage_one_row_per_version_and_place_however_spelled(
    o41_env: Env, o41_api: Client
) -> None:
    home, reader, a = a_box_and_a_reader_elsewhere(o41_env, o41_api, "usage-d")
    name = a.artifact
    versions = {}
    for step in (1, 2):
        versions[step] = make_files({"a": 1000 * step, "b": 300, "c/d": 17}, step)
        commit_ok(o41_api, a, f"step-{step:08d}", versions[step])
    for spelled in (str(reader), f"{reader.cloud.upper()}/{reader.region}"):
        body = expect_ok(o41_api.read(name, "step-00000001", urls=True, place=spelled),
                         "READ-2", "read")
        download(o41_api, body, parts=2)
    body = expect_ok(o41_api.read(name, "step-00000002", urls=True, place=reader), "READ-2",
                     "read")
    download(o41_api, body)
    usage = _usage(o41_api, name)
    writes = sorted((r.get("version"), r.get("bytes")) for r in _rows(usage, "write"))
    check_equal(writes, [("step-00000001", _size(versions[1])),
                         ("step-00000002", _size(versions[2]))], "USAGE-1", "write rows")
    reads = sorted((r.get("version"), r.get("bytes")) for r in _rows(usage, "read", reader))
    check_equal(reads, [("step-00000001", 2 * _size(versions[1])),
                        ("step-00000002", _size(versions[2]))], "USAGE-1", f"read rows {reader}")


@clause("USAGE-1.e")
@pytest.mark.parametrize("kind", ["no-place", "default"])
def test_usage_placements_count_every_version(o41_env: Env, o41_api: Client, kind: str) -> None:
    topo = o41_env.topology
    place = None if kind == "no-place" else topo.other_region(topo.clouds[0])
    want = topo.placement(place)
    name = o41_env.artifact("usage-e")
    a = open_box(o41_api, name, "box-a", place)
    for step in (1, 2, 3):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 100}, step))
    rows = [
        r for r in _usage(o41_api, name).get("placements", [])
        if Place.from_json(r.get("location")) == want.location
    ]
    check(rows, "USAGE-1", f"no placement of a box at {place} -> {want.location}")
    row = rows[0]
    check_equal(
        (row.get("kind"), Place.from_json(row.get("place")), row.get("route"),
         row.get("versions"), row.get("bytes")),
        ("fallback" if place is None else want.kind, place, want.route, 3, 300),
        "USAGE-1",
        f"placement row of a box at {place}",
    )
