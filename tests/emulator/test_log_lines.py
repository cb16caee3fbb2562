"""The per-call log: one line per call, naming its subject, that no client text can forge."""

from __future__ import annotations

import logging
import os

import pytest

from emulator.web.app import escape_log
from tests.support.emulator_http import AWS, Box


class Lines:
    """The emulator's log lines so far (not moto's), read afresh at each use."""

    def __init__(self, caplog) -> None:
        self.caplog = caplog

    def _all(self) -> list[str]:
        return [r.getMessage() for r in self.caplog.records if r.name == "o41.emulator"]

    def __iter__(self):
        return iter(self._all())

    def __getitem__(self, i: int) -> str:
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())


@pytest.fixture
def lines(caplog) -> Lines:
    caplog.set_level(logging.INFO, logger="o41.emulator")
    return Lines(caplog)


def test_a_holder_with_a_newline_cannot_forge_a_log_line(http, artifact, lines):
    evil = "box\nversions/commit p/a step-00000009 -> 200 epoch 1\x1b[2J"
    Box(http, artifact, AWS, holder=evil).open()
    assert Box(http, artifact, AWS).open().status == 200  # its line names whom it fenced
    fenced = [line for line in lines if "fenced" in line]
    assert fenced and all("\n" not in line and "\x1b" not in line for line in lines)
    assert "fenced box\\x0aversions/commit" in fenced[0] and "\\x1b[2J" in fenced[0]


def test_a_newline_in_the_path_is_escaped(http, lines):
    http.request("GET", "/api/v1/versions/read%0aforged%20line")
    assert lines and all("\n" not in line for line in lines)
    assert "\\x0aforged" in lines[-1]


def test_a_failed_read_names_its_artifact_with_single_spaces(http, artifact, lines):
    Box(http, artifact, AWS).open()
    r = http.request("GET", "/api/v1/versions/read", params={"artifact": artifact})
    assert r.status == 404
    assert lines[-1] == f"versions/read {artifact} -> 404 not_found"


def test_a_failed_commit_names_its_artifact(http, artifact, lines):
    box = Box(http, artifact, AWS)
    box.open()
    r = box.commit("up_nope")
    assert (r.status, r.code) == (404, "not_found")
    assert lines[-1] == f"versions/commit {artifact} -> 404 not_found"


def test_a_download_logs_its_range_with_an_inclusive_end(http, artifact, lines):
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001", {"m": os.urandom(300_000)})
    url = box.read().body["files"][0]["url"]
    http.request("GET", url, key=None)
    assert lines[-1].endswith("-> 200 0-299999 of 300000 bytes")
    http.request("GET", url, key=None, headers={"Range": "bytes=10-19"})
    assert lines[-1].endswith("-> 206 10-19 of 300000 bytes")


@pytest.mark.parametrize("text, logged", [
    ("plain é ok", "plain é ok"),
    ("a\r\nb", "a\\x0d\\x0ab"),
    ("tab\there", "tab\\x09here"),
    ("back\\x0aslash", "back\\\\x0aslash"),  # a backslash cannot fake an escape
    ("sep\u2028", "sep\\u2028"),
    ("c1\x85", "c1\\x85"),
    ("lone\udc00", "lone\\udc00"),
])
def test_escape_log_keeps_text_on_one_inert_line(text, logged):
    assert escape_log(text) == logged


def test_admin_endpoints_and_pages_are_logged_by_their_path(http, lines):
    assert http.request("GET", "/_emulator/health", key=None).status == 200
    assert lines[-1] == "GET /_emulator/health -> 200"
    assert http.request("GET", "/_emulator/state", key=None).status == 200
    assert lines[-1] == "GET /_emulator/state -> 200"
    http.request("GET", "/", key=None)
    assert lines[-1].startswith("GET / -> ")
