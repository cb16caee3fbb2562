"""The suite's report, names and seeds, without a target: clause ids roll up to their rule,
transport failures are charged to nothing, capabilities are judged apart, names and seeds
repeat from run to run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance import rules
from conformance.client import TargetUnreachable
from conformance.env import Env, ScopedKey
from conformance.html_report import render_html
from conformance.model import Topology
from conformance.profile import DEFAULT_SEED, choose_seed
from conformance.report import Collector, rule_of
from conformance.rules import RuleViolation
from conformance.session import run_names

CLAUSES = {
    "FENCE-2.a": "A write with an older token gets 409 fenced.",
    "FENCE-2.b": "A commit with an older token gets 409 fenced.",
    "OPEN-1.a": "resume=latest on a new artifact gives resume_from null.",
}


@pytest.fixture
def with_clauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "CLAUSES", CLAUSES, raising=False)


def test_rule_of_strips_clause_suffix() -> None:
    assert rule_of("FENCE-2.a") == "FENCE-2" and rule_of("FENCE-2") == "FENCE-2"


def test_collector_rolls_clauses_up_to_rules(with_clauses: None) -> None:
    c = Collector()
    c.record("t::a", ["FENCE-2.a", "FENCE-2.b"], "call", "failed",
             exc=RuleViolation("FENCE-2", "x"), message="m")
    c.record("t::b", ["FENCE-2.a", "OPEN-1.a"], "call", "passed")
    assert c.by_rule()["FENCE-2"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert c.by_rule()["OPEN-1"] == {"passed": 1, "failed": 0, "skipped": 0}
    clauses = c.by_clause()
    # A check naming only the rule fails every clause of it that the test marks.
    assert clauses["FENCE-2.a"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert clauses["FENCE-2.b"] == {"passed": 0, "failed": 1, "skipped": 0}
    assert list(clauses) == ["OPEN-1.a", "FENCE-2.a", "FENCE-2.b"]  # the contract's order
    lines = c.lines()
    assert any(ln.startswith("clause") for ln in lines)
    assert any(ln.startswith("FENCE-2.b") and ln.endswith("FAIL") for ln in lines)
    data = c.to_json({})
    assert data["clauses"]["OPEN-1.a"]["status"] == "pass"
    assert data["clauses"]["FENCE-2.a"]["text"] == CLAUSES["FENCE-2.a"]


def test_collector_prints_clause_table_only_when_tests_mark_clauses(with_clauses: None) -> None:
    c = Collector()
    c.record("t::a", ["FENCE-2"], "call", "passed")
    assert not any(ln.startswith("clause") for ln in c.lines())
    # The JSON still lists every clause: one without a test shows as "----".
    assert c.to_json({})["clauses"]["FENCE-2.a"]["status"] == "----"


def test_transport_failure_is_an_error_charged_to_no_rule() -> None:
    c = Collector()
    lost = TargetUnreachable("GET", "http://h/api/v1/x", ConnectionRefusedError(111, "refused"))
    c.record("t::a", ["FENCE-2"], "call", "failed", exc=ExceptionGroup("g", [lost]), message="")
    assert c.results["t::a"].outcome == "error"
    assert c.by_rule()["FENCE-2"] == {"passed": 0, "failed": 0, "skipped": 0}
    assert "got no answer" in c.to_json({})["errors"][0]["message"]


def test_capabilities_judged_apart_from_base() -> None:
    c = Collector()
    c.record("t::base", ["OPEN-1"], "call", "passed")
    c.record("t::usage", ["USAGE-1"], "setup", "skipped", message="no /usage/read",
             features=["usage"])
    c.record("t::scoped", ["AUTH-3"], "call", "failed", exc=RuleViolation("AUTH-3", "x"),
             features=["scoped_key"])
    data = c.to_json({})
    assert data["verdict"] == {"base": "pass", "usage": "skip", "scoped_key": "fail"}
    assert data["capability_results"]["usage"]["reason"] == "no /usage/read"


def test_html_report_is_self_contained_and_escaped() -> None:
    c = Collector()
    c.record("t::x[<b>]", ["FENCE-2"], "call", "failed", exc=RuleViolation("FENCE-2", "<i>"),
             message="RuleViolation: <script>alert(1)</script>", trail=["POST /open -> 200"])
    page = render_html(c.to_json({"target": "http://h", "seed": 41}))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "t::x[&lt;b&gt;]" in page and "POST /open -&gt; 200" in page
    assert ">FAIL<" in page and "href=" not in page and "src=" not in page


def _env(**kw: object) -> Env:
    return Env(base="http://h/api/v1", key="k", topology=Topology.parse(), **kw)  # type: ignore[arg-type]


def test_names_repeat_across_runs_and_never_within_one() -> None:
    one, two = _env(prefix="conf-spawn"), _env(prefix="conf-spawn")
    names = [one.artifact("fence2"), one.artifact("fence2"), one.artifact("open1")]
    assert names == ["conf-spawn/fence2-1", "conf-spawn/fence2-2", "conf-spawn/open1-1"]
    assert [two.artifact("fence2"), two.artifact("fence2"), two.artifact("open1")] == names
    assert one.holder("box-a") != one.holder("box-a")
    tagged = _env(prefix="mine", run_tag="ab12")
    assert tagged.artifact("x") == "mine/x-1-ab12"
    assert one.rng("files").random() == two.rng("files").random()
    assert _env(prefix="p", seed=1).rng("files").random() != one.rng("files").random()


def test_run_names_fixed_for_spawn_fresh_for_url() -> None:
    assert run_names("spawn", None).prefix == "conf-spawn"
    a, b = run_names("http://h", None), run_names("http://h", None)
    assert a.prefix != b.prefix and a.prefix.startswith("conf-") and a.tag == ""
    given = run_names("http://h", "mine")
    assert given.prefix == "mine" and len(given.tag) == 8


def test_scoped_key_names_and_refusals() -> None:
    scoped = ScopedKey.parse("ak_s=scoped-proj/", "shared-proj/")
    env = _env(prefix="conf-ab", scoped=scoped)
    assert env.scoped_artifact("a") == "scoped-proj/conf-ab-a-1"
    assert env.scoped_artifact("a", "read") == "shared-proj/conf-ab-a-1"
    assert _env(prefix="p", scoped=ScopedKey.parse("k=team")).scoped_artifact("a") == "team/p-a-1"
    for bad in ("ak_s", "=p", "k="):
        with pytest.raises(ValueError):
            ScopedKey.parse(bad)
    with pytest.raises(ValueError, match="cover the run's own artifacts"):
        _env(prefix="scoped-proj", scoped=scoped)
    with pytest.raises(LookupError, match="--scoped-read-prefix"):
        _env(prefix="p", scoped=ScopedKey.parse("k=a/")).scoped_artifact("x", "read")
    ok, why = _env(prefix="p").capability("scoped_key")
    assert not ok and "--scoped-key KEY=PREFIX" in why


def test_seed_fixed_for_ci_random_for_thorough_given_wins() -> None:
    assert choose_seed("ci", None) == DEFAULT_SEED
    assert choose_seed("thorough", 5) == choose_seed("ci", 5) == 5
    assert len({choose_seed("thorough", None) for _ in range(5)}) > 1


def _capability_notes(page: str) -> dict[str, str]:
    """The note cell of each row of the capability table, by capability."""
    import re

    table = page.split("<h2>Base and optional capabilities</h2>")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>([^<]+)</td>.*?<td(?: class=long)?>([^<]*)</td></tr>", table)
    return dict(rows)


def test_html_capability_notes_match_their_rows() -> None:
    """A skip of a test that carries no verdict (OPEN-1.a passed in another test) is not
    the base row's note: the PASS row said "optional capability: no read-only prefix"."""
    c = Collector()
    c.record("t::a", ["OPEN-1.a"], "call", "passed")
    c.record("t::b", ["OPEN-1.a"], "setup", "skipped",
             message="optional capability: no read-only prefix")
    c.record("t::u", ["USAGE-1.a"], "setup", "skipped", message="no /usage/read",
             features=["usage"])
    data = c.to_json({})
    assert data["verdict"]["base"] == "pass" and data["verdict"]["usage"] == "skip"
    notes = _capability_notes(render_html(data))
    assert notes == {"base": "", "usage": "no /usage/read"}


def test_html_report_reads_at_1400_px_without_scrolling_sideways(tmp_path: Path) -> None:
    """Long test ids, messages without spaces and a long command line wrap inside the page."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)")
    c = Collector()
    long_id = "test_x.py::test_" + "a_very_long_test_name_" * 8 + "[" + "p" * 120 + "]"
    c.record(long_id, ["FENCE-2.a"], "call", "failed", exc=RuleViolation("FENCE-2.a", "x"),
             message="RuleViolation: " + "x" * 600, trail=["GET /api/v1/" + "y" * 400])
    c.record("t::s", ["OPEN-1.a"], "setup", "skipped", message="skip:" + "z" * 300)
    page = tmp_path / "report.html"
    page.write_text(render_html(c.to_json({"command": "pytest " + "--opt=" + "v" * 500})))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            view = browser.new_page(viewport={"width": 1400, "height": 900})
            view.goto(page.as_uri())
            widths = view.evaluate("[document.documentElement.scrollWidth, "
                                   "document.documentElement.clientWidth]")
        finally:
            browser.close()
    assert widths[0] <= widths[1] == 1400, widths
