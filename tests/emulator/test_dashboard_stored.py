"""The usage page's "Stored now" table: committed versions and bytes by location, which a
delete (VER-7, keep-the-last-k) takes down at once. usage/read's placements (versions
written away from their box) go down alike: tests/emulator/test_retention.py."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from emulator import create_app
from tests.support.backends import make_settings
from tests.support.emulator_http import AWS, Box, Http


class Rows(HTMLParser):
    """The ``data-location`` rows of the stored table, by location."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: dict[str, tuple[int, int]] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr" and "data-location" in a:
            self.rows[a["data-location"]] = (int(a["data-versions"]), int(a["data-bytes"]))


@pytest.fixture
def app(tmp_path, request):
    return create_app(make_settings(tmp_path, request, "fs"))


def stored(app) -> dict[str, tuple[int, int]]:
    r = app.test_client().get("/usage")
    assert r.status_code == 200
    return Rows(r.get_data(as_text=True)).rows


def test_stored_bytes_per_location_go_down_when_a_version_is_deleted(app) -> None:
    http = Http("http://localhost", app.test_client())
    box = Box(http, "team/keep-last-k", AWS)
    assert box.open().status == 200
    for step in (1, 2, 3):
        assert box.checkpoint(f"step-{step:08d}", {"model.pt": b"m" * 1000}).status == 200
    location = next(iter(stored(app)))
    assert stored(app) == {location: (3, 3000)}
    r = http.request("POST", "/api/v1/versions/delete", json={
        "artifact": box.artifact, "token": box.token, "version": "step-00000001"})
    assert r.status == 200
    assert stored(app) == {location: (2, 2000)}


def test_an_empty_emulator_says_nothing_is_stored(app) -> None:
    r = app.test_client().get("/usage")
    assert 'data-empty="stored"' in r.get_data(as_text=True)
