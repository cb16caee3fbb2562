"""Each deliberate fault breaks exactly the rule it names (and the clean emulator does not)."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from emulator import create_app
from emulator.settings.faults import FAULTS
from emulator.settings.policy import Policy
from tests.support.backends import make_settings
from tests.support.emulator_http import AWS, GCP, Box, Http


def broken(box: Box, http: Http, artifact: str, fault: str) -> bool:
    """Run the smallest story for `fault`'s rule; True when the rule was broken."""
    box.open()
    if fault == "no-fencing":
        Box(http, artifact, GCP).open()
        return box.write("step-00000001", {"a": b"1"}).status == 200
    if fault == "open-not-atomic":
        f = {"a": b"1"}
        w = box.write("step-00000001", f)
        box.upload(w, f)
        Box(http, artifact, GCP).open()
        return box.commit(w.body["upload"]).status == 200
    box.checkpoint("step-00000001")
    box.checkpoint("step-00000002")
    if fault == "stale-latest":
        return box.read().body["version"] != "step-00000002"
    if fault == "fresh-overwrites":
        return Box(http, artifact, GCP).open(None).status == 200
    if fault == "fork-into-nonempty":
        return Box(http, artifact, GCP).open(f"o41://{artifact}/step-00000001").status == 200
    if fault == "wrong-cross-cloud":
        return box.read(place="aws/us-east-1").body["cross_cloud"] is not False
    if fault == "no-key-check":
        return http.request("GET", "/api/v1/artifacts/read", key=None,
                            params={"artifact": artifact}).status == 200
    if fault == "range-ignored":
        url = box.read().body["files"][0]["url"]
        return http.request("GET", url, key=None, headers={"Range": "bytes=0-1"}).status != 206
    if fault == "commit-without-files":
        w = box.write("step-00000003", {"a": b"never sent"})
        return box.commit(w.body["upload"]).status == 200
    if fault == "url-never-expires":
        import emulator.core.signing

        url = box.read().body["files"][0]["url"]
        real = emulator.core.signing.time.time
        emulator.core.signing.time.time = lambda: real() + 10**6
        try:
            return http.request("GET", url, key=None).status == 200
        finally:
            emulator.core.signing.time.time = real
    if fault == "fallback-silent":
        return Box(http, artifact + "x", {"cloud": "oracle", "region": "r"}).open().body[
            "warnings"] == []
    if fault == "version-overwrite":
        return box.write("step-00000002", {"a": b"again"}).status == 200
    raise AssertionError(f"no story for {fault}")


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_breaks_its_rule_and_clean_emulator_holds(tmp_path, request, fault, artifact):
    for faults, expected in ((frozenset({fault}), True), (frozenset(), False)):
        settings = make_settings(tmp_path / ("f" if faults else "c"), request, faults=faults)
        http = Http("http://localhost", create_app(settings).test_client())
        assert broken(Box(http, artifact, AWS), http, artifact, fault) is expected


def test_a_misspelt_fault_fails_loudly_instead_of_switching_it_off(tmp_path, request):
    backend = create_app(make_settings(tmp_path, request)).extensions["o41"]
    assert backend.policy == Policy() and not backend.faults
    with pytest.raises(ValueError, match="unknown fault"):
        create_app(make_settings(tmp_path / "x", request, faults=frozenset({"no-fencnig"})))


def test_each_fault_breaks_exactly_one_field_of_the_policy():
    for name in FAULTS:
        policy = Policy.breaking([name])
        off = [f.name for f in fields(Policy) if not getattr(policy, f.name)]
        assert len(off) == 1 and policy.broken() == [name], name


def test_every_field_of_the_policy_is_consulted_by_the_rules():
    """A fault no code asks about would pass its own test only by accident; and the rules
    ask the policy's fields, never a fault's name."""
    root = Path(__file__).resolve().parents[2] / "emulator"
    asked = set()
    for path in root.rglob("*.py"):
        if path.name in ("faults.py", "policy.py", "config.py", "cli.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            assert not (isinstance(node, ast.Constant) and node.value in FAULTS), path
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "policy"):
                asked.add(node.attr)
    assert asked - {"broken"} == {f.name for f in fields(Policy)}
