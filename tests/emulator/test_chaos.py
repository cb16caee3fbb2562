"""`/_emulator/chaos`: transient faults a client's retries can be tested against."""

from __future__ import annotations

import pytest
import requests

from tests.support.emulator_http import AWS, Box


def set_chaos(http, rules) -> None:
    r = http.request("POST", "/_emulator/chaos", key=None, json={"rules": rules})
    assert r.status == 200, r.body


def test_chaos_fails_chosen_operation_with_503_until_cleared(http, artifact):
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001")
    set_chaos(http, [{"operation": "versions/read", "probability": 1.0}])
    r = box.read()
    assert (r.status, r.code) == (503, "unavailable") and r.headers["Retry-After"] == "0"
    assert box.usage().status == 200  # other operations are untouched
    http.request("DELETE", "/_emulator/chaos", key=None)
    assert box.read().status == 200


def test_chaos_with_probability_zero_never_fires(http, artifact):
    set_chaos(http, [{"operation": "*", "probability": 0.0, "status": 500}])
    assert Box(http, artifact, AWS).open().status == 200


@pytest.mark.parametrize("rules", [
    [{"operation": "nope"}], [{"probability": 2}], [{"status": 200}], [{"latency_ms": -1}],
    [{"cut_after_bytes": -5}], [{"colour": "red"}], "x",
])
def test_chaos_rejects_malformed_rules(http, rules):
    r = http.request("POST", "/_emulator/chaos", key=None, json={"rules": rules})
    assert (r.status, r.code) == (400, "invalid_argument")


def test_chaos_cuts_download_mid_body_and_meters_only_what_was_sent(live_factory, artifact):
    emu = live_factory()
    box = Box(emu.http, artifact, AWS)
    box.open()
    data = bytes(range(256)) * 4096  # 1 MiB
    box.checkpoint("step-00000001", {"blob": data})
    url = box.read(place="aws/us-east-1").body["files"][0]["url"]
    set_chaos(emu.http, [{"operation": "data/get", "status": 0, "cut_after_bytes": 1000}])
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        requests.get(url, timeout=60).content  # noqa: B018 - reading the body is the point
    emu.http.request("DELETE", "/_emulator/chaos", key=None)
    assert requests.get(url, timeout=60).content == data
    reads = [t for t in box.usage().body["transfers"] if t["direction"] == "read"]
    assert reads[0]["bytes"] == 1000 + len(data)


def test_counted_chaos_rule_fires_exactly_that_many_times(http, artifact):
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001")
    set_chaos(http, [{"operation": "versions/read", "times": 2}])
    assert [box.read().status for _ in range(4)] == [503, 503, 200, 200]
    rules = http.request("GET", "/_emulator/chaos", key=None).body["rules"]
    assert rules[0]["times"] == 0


def test_calls_without_a_key_or_signature_use_up_no_rule(http, artifact):
    """Another site's <img> tag sends no key: chaos applies after the key check."""
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001")
    url = box.read().body["files"][0]["url"]
    set_chaos(http, [{"operation": "versions/read", "times": 1},
                     {"operation": "data/get", "times": 1}])
    keyless = http.request("GET", "/api/v1/versions/read", key=None,
                           params={"artifact": artifact})
    assert (keyless.status, keyless.code) == (401, "unauthenticated")
    forged = http.request("GET", url.replace("sig=", "sig=x"), key=None)
    assert forged.status == 403
    assert [r["times"] for r in http.request("GET", "/_emulator/chaos", key=None
                                             ).body["rules"]] == [1, 1]
    assert (box.read().status, http.request("GET", url, key=None).status) == (503, 503)
