"""PLACE-1..4, XC-1 and USAGE-1: where writes land, how reads are marked, what they cost."""

from __future__ import annotations

import pytest

from tests.support.emulator_http import AWS, AZURE, GCP, Box


@pytest.mark.parametrize("place", [AWS, GCP, AZURE])
def test_write_from_place_with_location_is_local(http, artifact, place):
    box = Box(http, artifact, place)
    r = box.open()
    assert r.body["write_location"] == {**place, "route": "local"} and r.body["warnings"] == []
    w = box.write("step-00000001", {"a": b"1"})
    assert w.body["location"] == place and w.body["route"] == "local"


def test_write_from_other_region_of_cloud_goes_to_default_with_warning(http, artifact):
    box = Box(http, artifact, {"cloud": "gcp", "region": "us-central1"})
    r = box.open()
    assert r.body["write_location"] == {**GCP, "route": "inter_region"}
    assert len(r.body["warnings"]) == 1 and "europe-west4" in r.body["warnings"][0]
    assert box.checkpoint("step-00000001").body["location"] == GCP


@pytest.mark.parametrize("place", [{"cloud": "oracle", "region": "us-ashburn-1"}, None])
def test_write_from_unknown_cloud_goes_to_fallback_with_warning(http, artifact, place):
    box = Box(http, artifact, place)
    r = box.open()
    assert r.body["write_location"] == {**AWS, "route": "cross_cloud"}
    assert "fallback" in r.body["warnings"][0] and "aws/us-east-1" in r.body["warnings"][0]
    box.checkpoint("step-00000001", {"a": b"x" * 1000})
    placements = box.usage().body["placements"]
    assert [(p["kind"], p["location"], p["bytes"]) for p in placements] == [
        ("fallback", AWS, 1000)
    ]


def test_cloud_names_compare_case_insensitively(http, artifact):
    r = Box(http, artifact, {"cloud": "GCP", "region": "europe-west4"}).open()
    assert r.body["write_location"]["route"] == "local"


def test_version_location_never_changes_after_hops(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    a.checkpoint("step-00000001")
    b = Box(http, artifact, AZURE)
    b.open()
    b.checkpoint("step-00000002")
    listed = http.request("GET", "/api/v1/versions/list", params={"artifact": artifact}).body
    assert [v["location"] for v in listed["versions"]] == [AWS, AZURE]


@pytest.mark.parametrize(
    "reader, route, cross",
    [("aws/us-east-1", "local", False), ("aws/eu-west-1", "inter_region", False),
     ("gcp/europe-west4", "cross_cloud", True), ("oracle/x", "cross_cloud", True)],
)
def test_read_marks_cross_cloud_exactly_when_clouds_differ(http, artifact, reader, route, cross):
    a = Box(http, artifact, AWS)
    a.open()
    a.checkpoint("step-00000001")
    v = a.read(place=reader).body
    assert (v["route"], v["cross_cloud"]) == (route, cross)


def test_usage_prices_cross_cloud_read_by_location_cloud(http, artifact):
    a = Box(http, artifact, GCP)
    a.open()
    data = b"z" * 5000
    a.checkpoint("step-00000001", {"a": data})
    url = a.read(place="azure/westeurope").body["files"][0]["url"]
    http.request("GET", url, key=None)
    u = a.usage().body
    assert u["routes"]["local"]["write_bytes"] == 5000 and u["routes"]["local"]["cost_usd"] == 0
    assert u["routes"]["cross_cloud"]["read_bytes"] == 5000
    assert u["routes"]["cross_cloud"]["cost_usd"] == pytest.approx(5000 / 1e9 * 0.12)
    assert u["prices"]["cross_cloud"]["gcp"] == 0.12
    assert u["total_cost_usd"] == pytest.approx(5000 / 1e9 * 0.12)


def test_usage_prices_inter_region_write(http, artifact):
    box = Box(http, artifact, {"cloud": "aws", "region": "us-west-2"})
    box.open()
    box.checkpoint("step-00000001", {"a": b"q" * 2000})
    u = box.usage().body
    assert u["routes"]["inter_region"]["write_bytes"] == 2000
    assert u["routes"]["inter_region"]["cost_usd"] == pytest.approx(2000 / 1e9 * 0.02)
    assert u["placements"][0]["kind"] == "default"
