"""The dashboard as a shared development emulator, rendered in-process: conformance runs
apart from the user's own artifacts, boxes of one task told apart, /usage in step order.

The browser half (layout at 700 px, outlines, screenshots after a real conformance run and a
replay) is in `test_dashboard_shared_browser.py`.
"""

from __future__ import annotations

import pytest

from emulator import create_app
from tests.emulator.test_dashboard import page
from tests.support.backends import make_settings
from tests.support.dashboard_seed import RUN, seed
from tests.support.emulator_http import AWS, GCP, Box, Http

GROWING = "experiments/growing"
CONF = ["conf-0badc0de/open-1a2b3c", "conf-0badc0de/fence-4d5e6f", "conf-feedf00d/read-777777"]


@pytest.fixture
def shared(tmp_path, request):
    """The user's world from dashboard_seed, plus what two conformance runs left behind."""
    app = create_app(make_settings(tmp_path, request, "fs"))
    http = Http("http://localhost", app.test_client())
    seed(http)
    growing = Box(http, GROWING, AWS, holder="box-g")  # local, so free: checkpoints that grow
    growing.open()
    for step in (1, 2, 3):
        assert growing.checkpoint(f"step-0000000{step}", {"m": b"x" * 1000 * step}).status == 200
    for name in CONF:
        box = Box(http, name, AWS, holder="conf-box")
        box.open()
        assert box.checkpoint("step-00000001", {"m": b"x"}).status == 200
    return app


def rows(app, path: str = "/") -> list[dict[str, str]]:
    return page(app, path).having("data-artifact", "tr")


def test_users_own_artifacts_come_first_and_conformance_runs_last_tagged(shared) -> None:
    names = [r["data-artifact"] for r in rows(shared)]
    assert names[-3:] == sorted(CONF) and not any(n.startswith("conf-") for n in names[:-3])
    assert all("data-conformance" in r for r in rows(shared) if r["data-artifact"] in CONF)
    html = shared.test_client().get("/").get_data(as_text=True)
    assert html.count('<span class="tag conf">conformance run</span>') == 3 + 1  # + the note


def test_note_counts_conformance_leftovers_and_says_how_to_hide_or_wipe_them(shared) -> None:
    html = " ".join(shared.test_client().get("/").get_data(as_text=True).split())
    assert ("3 artifacts in 2 <code>conf-*</code> projects were left by conformance runs "
            "against this emulator") in html
    assert '<a href="/?conformance=hide">Hide them</a>' in html
    assert "curl -X POST http://localhost/_emulator/reset" in html
    assert "deletes versions (keep-the-last-k) but never an artifact" in html
    assert "has no delete" not in html


def test_hiding_conformance_runs_keeps_only_the_users_artifacts(shared) -> None:
    names = [r["data-artifact"] for r in rows(shared, "/?conformance=hide")]
    assert names and not any(n.startswith("conf-") for n in names)
    html = " ".join(shared.test_client().get("/?conformance=hide").get_data(as_text=True).split())
    assert "They are hidden: <a href=\"/\">show them</a>." in html


def test_project_filter_lists_projects_users_first_and_shows_one(shared) -> None:
    links = [a["data-project"] for a in page(shared, "/").having("data-project", "a")]
    assert links == ["experiments", "scratch", "conf-0badc0de", "conf-feedf00d"]
    only = [r["data-artifact"] for r in rows(shared, "/?project=conf-0badc0de")]
    assert only == sorted(CONF[:2])


def test_no_note_and_no_project_bar_on_an_emulator_without_conformance_runs(tmp_path,
                                                                            request) -> None:
    app = create_app(make_settings(tmp_path, request, "fs"))
    Box(Http("http://localhost", app.test_client()), "experiments/a", AWS, holder="h").open()
    html = app.test_client().get("/").get_data(as_text=True)
    assert "data-conformance-note" not in html and "data-projects" not in html


def test_boxes_of_one_task_get_their_own_lane_holder_and_box_in_the_tooltip(tmp_path,
                                                                           request) -> None:
    app = create_app(make_settings(tmp_path, request, "fs"))
    http = Http("http://localhost", app.test_client())
    for box_id, place in (("a", AWS), ("b", GCP)):
        box = Box(http, "experiments/hop", place, holder=f"sky-1/rank-0@replay-{box_id}")
        box.open()
        assert box.checkpoint(f"step-0000000{ord(box_id) - 96}", {"m": b"x"}).status == 200
    lanes = page(app, "/").having("data-epoch", "div")
    assert [(lane["data-holder"], lane["data-box"]) for lane in lanes] == [
        ("sky-1/rank-0@replay-a", "replay-a"), ("sky-1/rank-0@replay-b", "replay-b")]
    assert "box replay-a" in lanes[0]["title"] and "aws/us-east-1" in lanes[0]["title"]
    chips = page(app, "/").having("data-version", "span")
    assert "by sky-1/rank-0@replay-b (box replay-b)" in chips[1]["title"]


def test_usage_transfers_of_equal_cost_are_in_step_order(shared) -> None:
    order = [r["data-transfer"] for r in page(shared, "/usage").having("data-transfer", "tr")]
    html = shared.test_client().get("/usage").get_data(as_text=True)
    assert order, html[:500]
    # GROWING's local writes all cost $0 and grow: step order, not largest first.
    free_writes = [t for t in order if t.rsplit("/", 2)[0] == GROWING]
    assert free_writes == [f"{GROWING}/step-0000000{s}/write" for s in (1, 2, 3)]
    run_writes = [t for t in order if t.rsplit("/", 2)[0] == RUN and t.endswith("/write")]
    assert [t.split("/")[2] for t in run_writes] == sorted(t.split("/")[2] for t in run_writes)
