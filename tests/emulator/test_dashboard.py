"""The dashboard and usage pages, rendered in-process: what they say about a seeded emulator.

The browser test (`test_dashboard_browser.py`) checks the same pages as a person sees them;
these pin the content and the data behind it without a browser.
"""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

import pytest

from emulator import create_app
from emulator.rules.dashboard_data import artifacts, usage
from emulator.web.dashboard import BAR_AREA, bar_chart, location_colours
from tests.support.backends import make_settings
from tests.support.dashboard_seed import FORK, LAMBDA, RUN, SCRATCH, seed
from tests.support.emulator_http import AWS, Box, Http


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text inside each `data-*` element."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def having(self, attr: str, tag: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.found if attr in a and (tag is None or t == tag)]


@pytest.fixture
def app(tmp_path, request):
    return create_app(make_settings(tmp_path, request, "fs"))


@pytest.fixture
def seeded(app):
    http = Http("http://localhost", app.test_client())
    seed(http)
    return app


def page(app, path: str) -> Elements:
    r = app.test_client().get(path)
    assert r.status_code == 200 and r.mimetype == "text/html"
    return Elements(r.get_data(as_text=True))


def test_dashboard_lists_each_artifact_with_epoch_and_current_holder(seeded):
    rows = {r["data-artifact"]: r for r in page(seeded, "/").having("data-artifact", "tr")}
    assert set(rows) == {RUN, FORK, LAMBDA, SCRATCH}
    assert (rows[RUN]["data-epoch"], rows[RUN]["data-holder"]) == ("3", "box-c")
    assert (rows[FORK]["data-epoch"], rows[FORK]["data-holder"]) == ("1", "box-d")


def test_timeline_colours_each_version_by_the_location_it_landed_in(seeded):
    colours = location_colours(seeded.extensions["o41"].geography)
    chips = page(seeded, "/").having("data-version")
    landed = {c["data-version"]: c["data-location"] for c in chips}
    assert landed["step-00000500"] == "aws/us-east-1"
    assert landed["step-00000900"] == "gcp/europe-west4"
    assert landed["step-00000910"] == "azure/westeurope"
    for chip in chips:
        assert f"background: {colours[chip['data-location']]}" in chip["style"]
    assert len(set(colours.values())) == 3


def test_timeline_marks_fenced_holders_and_their_refused_upload(seeded):
    html = page(seeded, "/")
    lanes = [(lane["data-epoch"], lane["data-holder"], lane["data-fenced-by"])
             for lane in html.having("data-fenced-by")]
    # Holders are unique across the seeded artifacts, so their lanes can be picked out by name.
    assert ("1", "box-a", "2") in lanes and ("2", "box-b", "3") in lanes
    assert ("3", "box-c", "") in lanes and ("1", "box-e", "") in lanes
    refused = html.having("data-attempt")
    assert [(a["data-attempt"], a["data-state"]) for a in refused] == [("step-00000600", "fenced")]


def test_forks_are_marked_on_the_fork_and_on_the_checkpoint_it_came_from(seeded):
    html = page(seeded, "/")
    assert [t["data-forked-from"] for t in html.having("data-forked-from")] == [
        f"o41://{RUN}/step-00000300"
    ]
    assert [t["data-fork"] for t in html.having("data-fork")] == [FORK]
    assert [m["data-forked-into"] for m in html.having("data-forked-into")] == [FORK]


def test_artifact_view_puts_versions_in_the_lane_of_the_open_that_wrote_them(seeded):
    run = next(a for a in artifacts(seeded.extensions["o41"]) if a.name == RUN)
    assert [(lane.epoch, lane.holder, lane.place) for lane in run.lanes] == [
        (1, "box-a", "aws/us-east-1"), (2, "box-b", "gcp/europe-west4"),
        (3, "box-c", "azure/westeurope"),
    ]
    assert [v.step for v in run.lanes[1].versions] == [510, 600, 700, 800, 900]
    assert run.fenced_holders == ["box-a", "box-b"]
    assert run.lanes[0].opened_at.endswith("Z")
    read_from = {v.version: v.read_cross_cloud_by for lane in run.lanes for v in lane.versions}
    assert read_from["step-00000500"] == ["gcp/europe-west4"]
    assert read_from["step-00000900"] == ["azure/westeurope"]
    assert read_from["step-00000300"] == []  # the fork read it from aws/us-west-2: same cloud


def test_usage_chart_draws_the_bytes_the_usage_api_reports(seeded):
    api = Http("http://localhost", seeded.test_client()).request("GET", "/api/v1/usage/read").body
    bars = page(seeded, "/usage").having("data-direction", "rect")
    drawn = {(b["data-route"], b["data-direction"]): int(b["data-bytes"]) for b in bars}
    for route, totals in api["routes"].items():
        assert drawn[(route, "write")] == totals["write_bytes"]
        assert drawn[(route, "read")] == totals["read_bytes"]
    widest = max(float(b["width"]) for b in bars)
    assert widest == pytest.approx(BAR_AREA)


def test_usage_page_says_where_a_new_location_pays(seeded):
    rows = page(seeded, "/usage").having("data-saved", "tr")
    by_place = {r["data-place"]: r for r in rows}
    assert set(by_place) == {"lambda/us-east-1", "aws/us-west-2"}
    fallback, default = by_place["lambda/us-east-1"], by_place["aws/us-west-2"]
    assert fallback["data-kind"] == "fallback" and default["data-kind"] == "default"
    # Writes leave the box's cloud: lambda is "other" (0.09), aws inter-region is 0.02.
    assert float(fallback["data-saved"]) == pytest.approx(int(fallback["data-bytes"]) / 1e9 * 0.09)
    assert float(default["data-saved"]) == pytest.approx(int(default["data-bytes"]) / 1e9 * 0.02)
    assert rows[0] is fallback  # the largest saving first


def test_savings_group_writes_from_one_place_across_artifacts(seeded):
    http = Http("http://localhost", seeded.test_client())
    other = Box(http, "experiments/lambda-two", {"cloud": "lambda", "region": "us-east-1"})
    other.open()
    assert other.checkpoint("step-00000001", {"w": b"x" * 1000}).status == 200
    saving = next(s for s in usage(seeded.extensions["o41"]).savings
                  if s.place == "lambda/us-east-1")
    assert saving.versions == 4 and saving.location == "aws/us-east-1"


def test_empty_emulator_shows_how_to_start_and_no_saving(app):
    assert page(app, "/").having("data-empty")
    assert page(app, "/usage").having("data-empty")


def test_holder_names_are_escaped_not_rendered_as_html(app):
    Box(Http("http://localhost", app.test_client()), "x/y", AWS,
        holder="<script>alert(1)</script>").open()
    html = app.test_client().get("/").get_data(as_text=True)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_faults_are_announced_on_every_page(tmp_path, request):
    app = create_app(make_settings(tmp_path, request, "fs", faults=frozenset({"no-fencing"})))
    for path in ("/", "/usage"):
        assert [f["data-faults"] for f in page(app, path).having("data-faults")] == ["no-fencing"]


def test_pages_need_the_admin_key_when_one_is_set(tmp_path, request):
    app = create_app(make_settings(tmp_path, request, "fs", admin_key="ak_admin"))
    client = app.test_client()
    refused = client.get("/")
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Basic")
    assert refused.get_json()["error"]["code"] == "unauthenticated"
    basic = base64.b64encode(b"anyone:ak_admin").decode()
    assert client.get("/usage", headers={"Authorization": f"Basic {basic}"}).status_code == 200
    assert client.get("/", headers={"Authorization": "Bearer ak_admin"}).status_code == 200
    wrong = base64.b64encode(b"anyone:nope").decode()
    assert client.get("/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401


def test_bar_chart_gives_empty_routes_no_bar():
    from emulator.rules.dashboard_data import RouteUse

    bars, height = bar_chart([RouteUse("local", 0, 0, 0.0), RouteUse("cross_cloud", 10, 5, 1.0)])
    widths = {(b.route, b.direction): b.width for b in bars}
    assert widths[("local", "write")] == 0 and widths[("cross_cloud", "write")] == BAR_AREA
    assert widths[("cross_cloud", "read")] == BAR_AREA / 2 and height > 0


@pytest.mark.parametrize("name", ["dashboard.png", "usage.png"])
def test_docs_keep_a_screenshot_of_each_page(name):
    # Refreshed by O41_UPDATE_SCREENSHOTS=1 pytest tests/emulator/test_dashboard_browser.py
    png = (Path(__file__).resolve().parents[2] / "docs" / name).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
