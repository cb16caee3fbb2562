"""Both pages in real headless Chromium (Debian's, driven by Playwright) on a served emulator.

Skips when no Chromium is found, except under CI (`CI=true`), where it must run: `.ci/run`
installs Debian's `chromium`. `O41_UPDATE_SCREENSHOTS=1` also writes the pages' screenshots
to `docs/dashboard.png` and `docs/usage.png`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dashboard_seed import FORK, LAMBDA, RUN, SCRATCH, seed
from tests.support.served import Emulator

DOCS = Path(__file__).resolve().parents[2] / "docs"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator:
    path = find_chromium()
    reason = None if path else "no Chromium on PATH (Debian: apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = reason or "playwright is not installed (pip install -e '.[test]')"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; under CI the browser tests must run")
        pytest.skip(reason)
    # Playwright gives each launch a fresh temporary profile (user data dir).
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=path, headless=True, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Emulator]:
    emu = Emulator("--data-dir", str(tmp_path_factory.mktemp("dash") / "data"))
    emu.start()
    try:
        seed(emu.http)
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def page(browser, served) -> Iterator:
    """A page that records every request and console error, to prove it stays offline."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.requests_seen, pg.console_errors = [], []
    pg.on("request", lambda r: pg.requests_seen.append(r.url))
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    yield pg
    assert pg.console_errors == []
    foreign = [u for u in pg.requests_seen
               if not u.startswith(served.url) and not u.startswith("data:")]
    assert foreign == [], "the pages must load nothing from elsewhere"
    context.close()


def keep_screenshot(pg, name: str, tmp_path: Path) -> None:
    shot = tmp_path / name
    pg.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("O41_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, DOCS / name)


def style(pg, selector: str, prop: str) -> str:
    return pg.eval_on_selector(selector, f"el => getComputedStyle(el).{prop}")


def test_dashboard_in_chromium_shows_artifacts_timelines_fences_and_forks(page, served,
                                                                          tmp_path):
    page.goto(served.url + "/")
    assert page.title() == "Artifacts · o41 emulator"
    rows = page.locator("tr[data-artifact]")
    assert rows.count() == 4
    assert sorted(rows.nth(i).get_attribute("data-artifact") for i in range(4)) == sorted(
        [RUN, FORK, LAMBDA, SCRATCH])
    run_row = page.locator(f'tr[data-artifact="{RUN}"]').inner_text().split("\t")
    assert run_row[:4] == [RUN, "3", "box-c", "11"]

    timeline = page.locator(f'section[data-timeline="{RUN}"]')
    assert timeline.is_visible()
    # Each checkpoint is painted in its location's colour, as the legend shows it.
    for location, version in (("aws/us-east-1", "step-00000500"),
                              ("gcp/europe-west4", "step-00000900"),
                              ("azure/westeurope", "step-00000910")):
        legend = style(page, f'[data-location="{location}"] .swatch', "backgroundColor")
        chip = style(page, f'section[data-timeline="{RUN}"] [data-version="{version}"]',
                     "backgroundColor")
        assert chip == legend and chip != "rgba(0, 0, 0, 0)"
    fenced = timeline.locator(".lane.fenced")
    assert fenced.count() == 2
    assert "fenced by epoch 2" in fenced.nth(0).inner_text()
    assert "line-through" in style(page, ".lane.fenced .holder", "textDecorationLine")
    refused = timeline.locator('[data-attempt="step-00000600"]')
    assert refused.is_visible() and refused.get_attribute("data-state") == "fenced"
    assert "line-through" in style(page, "[data-attempt]", "textDecorationLine")
    assert page.locator("[data-forked-from]").inner_text() == (
        f"↳ forked from o41://{RUN}/step-00000300")
    assert timeline.locator("[data-fork]").inner_text() == f"↳ fork {FORK}"
    keep_screenshot(page, "dashboard.png", tmp_path)


def test_usage_in_chromium_draws_route_bars_and_where_a_location_pays(page, served, tmp_path):
    page.goto(served.url + "/usage")
    chart = page.locator('svg[data-chart="routes"]')
    assert chart.is_visible()
    usage = served.http.request("GET", "/api/v1/usage/read").body["routes"]
    widths = {}
    for route in usage:
        for direction in ("write", "read"):
            bar = chart.locator(f'rect[data-route="{route}"][data-direction="{direction}"]')
            widths[(route, direction)] = bar.bounding_box()["width"] if bar.count() else 0.0
    # Bars are drawn to one scale: their rendered widths keep the bytes' proportions.
    widest = max(widths.values())
    top = max(max(r["write_bytes"], r["read_bytes"]) for r in usage.values())
    for (route, direction), width in widths.items():
        expected = usage[route][f"{direction}_bytes"] / top * widest
        assert width == pytest.approx(expected, abs=2.5), (route, direction)
    assert widths[("cross_cloud", "read")] > 0 and widths[("local", "read")] == 0

    savings = page.locator('table[data-table="savings"] tbody tr')
    assert savings.count() == 2
    first = savings.nth(0).inner_text()
    assert "lambda/us-east-1" in first and "aws/us-east-1" in first and "fallback" in first
    assert "aws/us-west-2" in savings.nth(1).inner_text()
    keep_screenshot(page, "usage.png", tmp_path)
