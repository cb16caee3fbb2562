"""One error shape everywhere, and docs that cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.core.errors import ALL_ERRORS
from emulator.settings.faults import FAULTS

DOCS = Path(__file__).resolve().parents[2] / "docs"
RULE_IDS = ["AUTH-1", "AUTH-2", "AUTH-3", "OPEN-1", "OPEN-2", "OPEN-3", "FORK-1", "FORK-2",
            "FENCE-1", "FENCE-2", "FENCE-3", "FENCE-4", "VER-1", "VER-2", "VER-3", "VER-4",
            "READ-1", "READ-2", "READ-3", "READ-4", "PLACE-1", "PLACE-2", "PLACE-3", "PLACE-4",
            "XC-1", "USAGE-1"]


def test_error_body_shape_is_code_and_message(http):
    r = http.request("POST", "/api/v1/artifacts/open", json={"artifact": "../etc"})
    assert r.status == 400
    assert r.body == {"error": {"code": "invalid_argument", "message": r.body["error"]["message"]}}
    assert r.body["error"]["message"]


@pytest.mark.parametrize("body, ctype", [(b"{not json", "application/json"),
                                         (b"[1, 2]", "application/json"),
                                         (b'{"artifact": "a/b"}', "text/plain")])
def test_malformed_or_mistyped_body_is_invalid_argument(http, body, ctype):
    r = http.request("POST", "/api/v1/artifacts/open", data=body,
                     headers={"Content-Type": ctype})
    assert (r.status, r.code) == (400, "invalid_argument")


def test_unknown_api_route_is_not_found_json(http):
    r = http.request("GET", "/api/v1/nope")
    assert (r.status, r.code) == (404, "not_found")


def test_every_error_code_and_rule_id_is_in_the_contract_doc():
    text = (DOCS / "contract.md").read_text()
    for err in ALL_ERRORS:
        assert f"`{err.code}`" in text and str(err.status) in text, err.code
    for rule in RULE_IDS:
        assert re.search(rf"\b{rule}\b", text), rule


def test_every_fault_is_documented():
    text = (DOCS / "emulator.md").read_text()
    for name, (rule, _) in FAULTS.items():
        assert f"`{name}`" in text and rule in text, name
