"""A shared development emulator in headless Chromium, at 700 px: after a replay and a full
conformance run against the same data, as a team's emulator looks after a day's use.

Checks what a person sees: their own artifacts first with a note about the conformance runs'
leftovers and a way to hide them, one lane per replay box with the box in its tooltip, step
names on one line, no horizontal scrollbar, outlines told apart by their pattern.
`O41_UPDATE_SCREENSHOTS=1` writes `docs/shared-dashboard.png`, `docs/shared-timelines.png`,
`docs/shared-usage.png` and `docs/shared-transfers.png`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.emulator.test_dashboard_browser import browser  # noqa: F401 - the Chromium fixture
from tests.support.dashboard_seed import seed
from tests.support.emulator_http import GCP, Box
from tests.support.served import Emulator

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
HOP = "experiments/spot-hop"
WIDTH = 700


@pytest.fixture(scope="module")
def world(tmp_path_factory, browser) -> Iterator[Emulator]:  # noqa: F811
    """A replay's emulator data, served again, plus the seed world and a conformance run."""
    work = tmp_path_factory.mktemp("shared") / "replay"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    replay = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", "fixtures/scenarios/spot-hop.yaml",
         "--workdir", str(work), "--", sys.executable, "fixtures/examples/train.py",
         f"o41://{HOP}", "--steps", "12"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    emu = Emulator("--data-dir", str(work / "emulator-data"))
    emu.start()
    try:
        seed(emu.http)
        # A URL target's base verdict needs a read-only and a scoped key too (docs/conformance.md)
        keys = {access: requests.post(f"{emu.url}/_emulator/keys", timeout=30, json={
            "scopes": [{"prefix": prefix, "access": access}]}).json()["key"]
            for prefix, access in (("conf-", "read"), ("team-a/", "write"))}
        suite = subprocess.run(
            [sys.executable, "-m", "pytest", "conformance", "--target", emu.url, "--api-key",
             "ak_local", "--read-key", keys["read"], "--scoped-key", f"{keys['write']}=team-a/",
             "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert suite.returncode == 0, suite.stdout[-3000:]
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def narrow(browser) -> Iterator:  # noqa: F811
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()


def no_horizontal_scroll(pg) -> None:
    width, inner = pg.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"the page is {width} px wide in a {inner} px window"


def wrapped_steps(pg) -> list[str]:
    return pg.evaluate("[...document.querySelectorAll('code.step')]"
                       ".filter(e => e.getClientRects().length > 1).map(e => e.textContent)")


def shoot(pg, name: str, tmp_path: Path, height: int | None = None, top: int = 0) -> None:
    shot = tmp_path / name
    clip = {"x": 0, "y": top, "width": WIDTH, "height": height} if height else None
    pg.screenshot(path=str(shot), full_page=True, clip=clip)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("O41_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, DOCS / name)


@pytest.mark.slow
def test_shared_dashboard_puts_yours_first_and_conformance_runs_apart(world, narrow,
                                                                     tmp_path) -> None:
    narrow.goto(world.url + "/")
    names = narrow.eval_on_selector_all("tr[data-artifact]",
                                        "rows => rows.map(r => r.dataset.artifact)")
    conf = [n for n in names if n.startswith("conf-")]
    assert len(conf) > 50 and names[-len(conf):] == conf and HOP in names[:-len(conf)]
    note = narrow.locator("[data-conformance-note]")
    assert note.is_visible()
    assert f"{len(conf)} artifacts in 1 conf-* project were left by conformance runs" in (
        " ".join(note.inner_text().split()))
    no_horizontal_scroll(narrow)
    assert wrapped_steps(narrow) == []
    shoot(narrow, "shared-dashboard.png", tmp_path, height=1250)

    note.get_by_role("link", name="Hide them").click()
    narrow.wait_for_url("**/?conformance=hide")
    shown = narrow.eval_on_selector_all("tr[data-artifact]", "rows => rows.length")
    assert shown == len(names) - len(conf)


@pytest.mark.slow
def test_replay_boxes_have_their_own_lanes_and_outlines_differ_in_pattern(world, narrow,
                                                                         tmp_path) -> None:
    narrow.goto(world.url + "/?project=experiments")
    lanes = narrow.locator(f'section[data-timeline="{HOP}"] .lane')
    assert lanes.count() == 3
    boxes = [lanes.nth(i).get_attribute("data-box") for i in range(3)]
    assert boxes == ["replay-a", "replay-b", "replay-c"]
    holders = {lanes.nth(i).get_attribute("data-holder") for i in range(3)}
    assert len(holders) == 3 and len({h.partition("@")[0] for h in holders}) == 1
    assert "box replay-b" in lanes.nth(1).get_attribute("title")
    styles = narrow.evaluate("""() => ['placed-default', 'placed-fallback'].map(c => {
        const s = getComputedStyle(document.querySelector('.chip.' + c));
        return [s.outlineStyle, s.outlineColor]; })""")
    (default_style, default_colour), (fallback_style, fallback_colour) = styles
    assert (default_style, fallback_style) == ("dotted", "dashed")
    assert default_colour != fallback_colour
    no_horizontal_scroll(narrow)
    shoot(narrow, "shared-timelines.png", tmp_path)


@pytest.mark.slow
def test_usage_at_700_px_has_no_scrollbar_unwrapped_steps_and_step_order(world, narrow,
                                                                        tmp_path) -> None:
    narrow.goto(world.url + "/usage")
    no_horizontal_scroll(narrow)
    assert wrapped_steps(narrow) == []
    rows = narrow.eval_on_selector_all(
        "tr[data-transfer]", "rows => rows.map(r => [Number(r.dataset.cost), r.dataset.transfer])")
    assert len(rows) == 100  # the costliest hundred of many
    # Costliest first; rows of one cost by artifact, then step: never out of step order.
    keys = [(-cost, *transfer.rsplit("/", 2)[:2]) for cost, transfer in rows]
    assert keys == sorted(keys)
    assert len({cost for cost, _ in rows}) < len(rows)  # there are ties to order
    shoot(narrow, "shared-usage.png", tmp_path, height=1500)
    table = narrow.locator('table[data-table="transfers"]').bounding_box()
    shoot(narrow, "shared-transfers.png", tmp_path, height=900, top=int(table["y"]) - 60)


def test_longest_names_holders_and_places_still_fit_700_px(live_factory, narrow) -> None:
    """Names at the contract's limits, with no '/' or '-' to break at, widen no page."""
    emu = live_factory()
    project, name = "p" + "q" * 127, "n" + "m" * 127  # two 128-character segments
    artifact = f"{project}/{name}"
    far = {"cloud": "lambda", "region": "r" + "s" * 63}  # no location there: the fallback
    writer = Box(emu.http, artifact, far, holder="h" * 256)
    assert writer.open().status == 200
    assert writer.checkpoint("step-00000001").status == 200
    reader = Box(emu.http, artifact, GCP, holder="g" * 256)
    for f in reader.open().body["resume_from"]["files"]:  # a cross-cloud read for /usage
        assert emu.http.request("GET", f["url"], key=None).status == 200
    for path in ("/", f"/?project={project}", "/usage"):
        narrow.goto(emu.url + path)
        assert narrow.locator(f'[data-artifact="{artifact}"], [data-transfer^="{artifact}/"]'
                              ).count() > 0, path
        no_horizontal_scroll(narrow)
        assert wrapped_steps(narrow) == []
