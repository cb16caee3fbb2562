"""Unit tests of the conformance suite's own parts: model, usage, rules, report, scenarios.

No target is needed: these pin the suite's reading of CONTRACT.md so the suite itself is
trustworthy (a checker with a wrong model would fail good implementations).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.actions import ranges
from conformance.client import Reply, normalize_base, parse_time
from conformance.model import (
    DEFAULT_PRICES,
    FileSpec,
    Model,
    Place,
    Topology,
    VersionModel,
    parse_fork,
    parse_step,
    price_per_gb,
    route_between,
    valid_file_name,
)
from conformance.report import Collector
from conformance.rules import RULES, RuleViolation, clauses_of, rule_of, rules_of
from conformance.scenarios import (
    ScenarioError,
    load_scenario,
    load_scenarios,
    parse_size,
)
from conformance.signatures import tampered_url
from conformance.usage import UsageModel

REPO = Path(__file__).resolve().parents[2]
TOPO = Topology.parse()
AWS, GCP, AZURE = (
    Place.parse(p) for p in ("aws/us-east-1", "gcp/europe-west4", "azure/westeurope")
)


def test_route_between_follows_route_definition() -> None:
    assert route_between(AWS, AWS) == "local"
    assert route_between(AWS, Place("aws", "us-west-2")) == "inter_region"
    assert route_between(AWS, GCP) == "cross_cloud"
    assert route_between(AWS, Place("lambda", "us-south-1")) == "cross_cloud"
    assert route_between(AWS, None) is None


def test_placement_local_default_fallback() -> None:
    assert TOPO.placement(GCP).route == "local"
    default = TOPO.placement(Place("gcp", "us-central1"))
    assert (default.location, default.route, default.kind) == (GCP, "inter_region", "default")
    for place in (Place("lambda", "x"), None):
        fb = TOPO.placement(place)
        assert (fb.location, fb.route, fb.kind) == (AWS, "cross_cloud", "fallback")


def test_topology_parses_places_and_fallback() -> None:
    topo = Topology.parse("gcp/us-central1, GCP/europe-west4", "gcp/europe-west4")
    assert topo.default_for("gcp") == Place("gcp", "us-central1")
    assert topo.fallback == Place("gcp", "europe-west4")
    with pytest.raises(ValueError):
        Topology.parse("aws/us-east-1", "gcp/europe-west4")


def test_prices_reproduce_the_page_table() -> None:
    """6.72 TB written: ~$134 to another region, $585-$806 out of the cloud; 20 GB ~$1.7-2.4."""
    tb = 6.72e12 / 1e9
    assert round(tb * price_per_gb(DEFAULT_PRICES, "write", AWS, Place("aws", "x"))) == 134
    out = [tb * price_per_gb(DEFAULT_PRICES, "write", AWS, Place(c, "r")) for c in ("azure", "gcp")]
    assert [round(x) for x in out] == [585, 806]
    resume = [20 * price_per_gb(DEFAULT_PRICES, "read", loc, AWS) for loc in (AZURE, GCP)]
    assert [round(x, 2) for x in resume] == [1.74, 2.4]
    assert price_per_gb(DEFAULT_PRICES, "read", AWS, AWS) == 0


@pytest.mark.parametrize(
    "name,ok",
    [
        ("step-00000300", True),
        ("step-300", False),
        ("Step-00000300", False),
        ("step-000003000", False),
    ],
)
def test_parse_step_accepts_eight_digits_only(name: str, ok: bool) -> None:
    assert (parse_step(name) is not None) is ok


@pytest.mark.parametrize(
    "name,ok",
    [
        ("model.pt", True),
        ("a/b/c.bin", True),
        ("", False),
        ("/abs", False),
        ("a//b", False),
        ("../x", False),
        ("a/./b", False),
        ("dir/", False),
    ],
)
def test_valid_file_name_rejects_unsafe_segments(name: str, ok: bool) -> None:
    assert valid_file_name(name) is ok


def test_parse_fork_needs_project_name_and_step() -> None:
    assert parse_fork("o41://experiments/run-1234/step-00000300") == (
        "experiments/run-1234",
        "step-00000300",
    )
    for bad in ("o41://run/step-00000300", "o41://a/b/latest", "s3://a/b/step-00000001"):
        assert parse_fork(bad) is None


def _model_with_version() -> tuple[Model, VersionModel]:
    m = Model(TOPO)
    m.record_open("p/a", m.predict_open("p/a", "latest", AWS), 1, "A")
    v = VersionModel("p/a", "step-00000100", AWS, (FileSpec("m", 1, "x"),), 1, "A")
    m.record_commit(v)
    return m, v


def test_model_open_outcomes() -> None:
    m, v = _model_with_version()
    assert m.predict_open("p/new", "latest", None).rule == "OPEN-1"
    again = m.predict_open("p/a", "latest", GCP)
    assert (again.resume_from, again.fenced, again.rule) == (v, (1, "A"), "OPEN-2")
    assert m.predict_open("p/a", None, GCP).code == "has_checkpoints"
    assert m.predict_open("p/a", "latest", GCP, can_write=False).code == "forbidden"
    assert m.predict_open("p/a", "o41://p/a/step-00000100", GCP).code == "not_empty"
    assert m.predict_open("p/b", "o41://p/a/step-00000101", GCP).code == "not_found"
    assert m.predict_open("p/b", "o41://p/a", GCP).code == "invalid_argument"
    fork = m.predict_open("p/b", "o41://p/a/step-00000100", GCP)
    assert (fork.resume_from, fork.forked_from, fork.fenced) == (v, ("p/a", "step-00000100"), None)


def test_model_epoch_must_increase() -> None:
    m, _ = _model_with_version()
    with pytest.raises(RuleViolation) as err:
        m.record_open("p/a", m.predict_open("p/a", "latest", AWS), 1, "B")
    assert err.value.rule == "FENCE-1"


def test_model_write_and_commit_outcomes() -> None:
    m, _ = _model_with_version()
    spec = [FileSpec("m", 1, "x")]
    assert m.predict_write("p/a", 1, "step-00000100", spec).later[1] == "version_exists"
    assert m.predict_write("p/a", 1, "step-00000050", spec).later[1] == "not_after_latest"
    assert m.predict_write("p/a", 1, "step-5", spec).now[1] == "invalid_argument"
    m.record_open("p/a", m.predict_open("p/a", "latest", AWS), 2, "B")
    assert m.predict_write("p/a", 1, "step-00000200", spec).now[1:] == ("fenced", "FENCE-2")
    # VER-6.f: malformed (400) before fenced (409)
    assert m.predict_write("p/a", 1, "step-5", spec).now[1:] == ("invalid_argument", "VER-1")
    assert m.predict_commit("p/a", 2, 1, "step-00000200")[1:] == ("fenced", "FENCE-2")
    assert m.predict_commit("p/a", 1, 1, "step-00000200")[1:] == ("fenced", "FENCE-3")
    assert m.predict_commit("p/a", 2, 2, "step-00000200") is None


def test_usage_model_bounds_uncommitted_writes() -> None:
    u = UsageModel()
    u.put("p/a", AWS, Place("lambda", "x"), 10**9).settled = True
    u.put("p/a", AWS, Place("lambda", "x"), 10**9)  # a zombie's upload, never committed
    u.read("p/a", AWS, GCP, 5 * 10**8)
    row = {"write_bytes": 10**9, "read_bytes": 5 * 10**8, "cost_usd": 0.09 + 0.045}
    good = {"routes": {"cross_cloud": row}, "total_cost_usd": 0.135}
    u.check("p/a", good)
    bad = {"routes": {"cross_cloud": {**row, "read_bytes": 1}}, "total_cost_usd": 0.135}
    with pytest.raises(RuleViolation, match="USAGE-1"):
        u.check("p/a", bad)


def test_rule_violation_carries_rule_and_text() -> None:
    err = RuleViolation("FENCE-2", "detail")
    assert "FENCE-2" in str(err) and RULES["FENCE-2"] in str(err)
    group = ExceptionGroup("many", [ValueError("x"), err])
    assert rules_of(group) == ["FENCE-2"]
    with pytest.raises(ValueError):
        RuleViolation("NOPE-1", "x")
    with pytest.raises(ValueError):
        RuleViolation("FENCE-2.z", "x")


def test_rule_violation_of_a_clause_charges_clause_and_rule() -> None:
    err = RuleViolation("FENCE-2.b", "detail")
    assert (err.rule, err.clause) == ("FENCE-2", "FENCE-2.b")
    assert "FENCE-2.b" in str(err) and "never shows" in str(err)
    group = ExceptionGroup("many", [err, RuleViolation("READ-1", "y")])
    assert rules_of(group) == ["FENCE-2", "READ-1"]
    assert clauses_of(group) == ["FENCE-2.b", "READ-1"]
    assert RuleViolation("READ-1", "y").clause is None


def test_every_rule_has_an_example_test() -> None:
    """Example tests (not only the state machine) cover every rule id of the contract."""
    marked: set[str] = set()
    for path in (REPO / "conformance" / "tests").rglob("test_*.py"):
        if path.name in ("test_stateful.py", "test_scenarios.py"):
            continue
        for args in re.findall(r"mark\.rule\(([^)]*)\)", path.read_text()):
            marked.update(rule_of(i) for i in re.findall(r'"([A-Z]+-\d(?:\.[a-z])?)"', args))
    assert set(RULES) - marked == set()


def test_rules_match_contract_doc() -> None:
    doc = REPO / "docs" / "contract.md"
    if not doc.exists():
        pytest.skip("docs/contract.md not written yet")
    ids = set(re.findall(r"\b([A-Z]{2,5}-\d)\b", doc.read_text()))
    assert set(RULES) <= ids


def test_collector_charges_failures_to_named_rules() -> None:
    c = Collector()
    c.record(
        "t::a",
        ["FENCE-2", "OPEN-2"],
        "call",
        "failed",
        exc=RuleViolation("FENCE-2", "x"),
        message="m",
        trail=["POST /artifacts/open"],
    )
    c.record("t::b", ["FENCE-2"], "call", "passed")
    c.record("t::c", ["USAGE-1"], "setup", "skipped", message="no usage")
    c.record("t::d", ["READ-1"], "setup", "failed", exc=OSError("down"), message="down")
    table = c.by_rule()
    assert table["FENCE-2"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert table["OPEN-2"] == {"passed": 0, "failed": 0, "skipped": 0}
    assert table["USAGE-1"]["skipped"] == 1 and table["READ-1"]["failed"] == 0
    report = c.to_json({"target": "x"})
    assert report["failures"][0]["rules"] == ["FENCE-2"]
    assert report["failures"][0]["steps"] == ["POST /artifacts/open"]
    assert report["errors"][0]["test"] == "t::d"
    assert any(line.startswith("FAILED FENCE-2:") for line in c.lines())


def test_collector_keeps_hypothesis_steps_without_invariants() -> None:
    err = RuleViolation("FENCE-2", "x")
    for note in (
        "state = ArtifactsMachine()",
        "boxes_0 = state.launch(alias='a')",
        "state.artifact_state_agrees()",
        "state.teardown()",
    ):
        err.add_note(note)
    c = Collector()
    c.record("t::sm", ["FENCE-2"], "call", "failed", exc=err, message="m")
    assert c.results["t::sm"].steps == [
        "state = ArtifactsMachine()",
        "boxes_0 = state.launch(alias='a')",
    ]


def test_client_helpers() -> None:
    assert normalize_base("http://h:1/") == "http://h:1/api/v1"
    assert normalize_base("http://h:1/api/v1") == "http://h:1/api/v1"
    assert parse_time("1970-01-01T00:00:10Z") == 10.0 and parse_time(5) == 5.0
    reply = Reply("GET", "/x", 409, {"error": {"code": "fenced", "message": "m"}}, {})
    assert reply.code == "fenced" and reply.brief() == "409 fenced"
    assert ranges(10, 3) == [(0, 3), (4, 7), (8, 9)] and ranges(2, 8) == [(0, 0), (1, 1)]
    url = "http://h/data/x?sig=abcdefgh&e=1"
    assert tampered_url(url) != url and tampered_url(url).startswith("http://h/data/x?")


def test_scenarios_load_and_spot_hop_hops_three_clouds() -> None:
    scenarios = {s.name: s for s in load_scenarios()}
    assert {
        "spot-hop",
        "no-location-fallback",
        "fork-mid-run",
        "fresh-relaunch-refused",
        "zombie-commit",
        "zombie-wakes-early",
        "open-race",
    } <= set(scenarios)
    hop = scenarios["spot-hop"]
    places = [s.args.get("place") for s in hop.steps if s.action == "open"]
    assert places == ["aws/us-east-1", "gcp/europe-west4", "azure/westeurope"]
    assert any(s.args.get("box") == "A" and s.expect.get("code") == "fenced" for s in hop.steps)


def test_scenario_loader_ignores_foreign_keys_and_rejects_typos(tmp_path: Path) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text(
        "name: ok\nrules: [OPEN-1]\nboxes: [{id: A, place: aws/us-east-1}]\n"
        "steps:\n  - open: {box: A}\n    expect: {resume_from: null}\n"
    )
    assert load_scenario(ok).steps[0].action == "open"
    only_boxes = tmp_path / "boxes.yaml"
    only_boxes.write_text("name: b\nboxes: [{id: A}]\n")
    assert load_scenario(only_boxes) is None
    bad = tmp_path / "bad.yaml"
    for steps in (
        "  - opne: {box: A}\n",
        "  - open: {box: A}\n    expect: {fenceed: A}\n",
        "  - open: {box: A}\n    expect: {status: 409}\n",
    ):
        bad.write_text(f"name: bad\nrules: [OPEN-1]\nsteps:\n{steps}")
        with pytest.raises(ScenarioError):
            load_scenario(bad)
    assert parse_size("2MB") == 2_000_000 and parse_size("1MiB") == 2**20


def test_public_surface_and_no_emulator_import() -> None:
    """The package exports its names and never imports the emulator it judges."""
    import conformance

    assert set(conformance.__all__) <= set(dir(conformance))
    sources = "\n".join(p.read_text() for p in (REPO / "conformance").glob("*.py"))
    assert not re.search(r"^\s*(from|import)\s+emulator\b", sources, re.MULTILINE)
