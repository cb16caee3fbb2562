"""Error replies map to one class per contract code; the public surface is stable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import o41
from o41 import errors

CODES = {"unauthenticated": 401, "forbidden": 403, "not_found": 404, "invalid_argument": 400,
         "has_checkpoints": 409, "not_empty": 409, "fenced": 409, "version_exists": 409,
         "not_after_latest": 409, "incomplete": 409, "payload_too_large": 413, "is_latest": 409}


@pytest.mark.parametrize("code,status", sorted(CODES.items()))
def test_every_contract_code_maps_to_its_class(code: str, status: int) -> None:
    err = errors.from_response(status, {"error": {"code": code, "message": "why"}})
    assert err.code == code and err.status == status and err.message == "why"
    assert type(err) is not errors.ApiError


def test_conflicts_share_a_base_and_fenced_has_its_own_exit_code() -> None:
    for code in ("has_checkpoints", "not_empty", "fenced", "version_exists",
                 "not_after_latest", "incomplete"):
        assert isinstance(errors.from_response(409, {"error": {"code": code}}), o41.Conflict)
    assert errors.Fenced.exit_code == o41.ExitCode.FENCED
    assert len({cls.exit_code for cls in (o41.Fenced, o41.Conflict, o41.Forbidden)}) == 3


def test_unknown_code_falls_back_to_status_class() -> None:
    err = errors.from_response(409, {"error": {"code": "brand_new", "message": "m"}})
    assert type(err) is o41.Conflict and err.code == "brand_new"
    assert isinstance(errors.from_response(503, None), o41.ServerError)
    assert type(errors.from_response(418, "teapot")) is o41.ApiError


def test_public_surface_is_all_exported() -> None:
    assert sorted(o41.__all__) == o41.__all__
    for name in o41.__all__:
        assert getattr(o41, name) is not None
    assert set(CODES) == set(errors.CODES)


def test_docs_list_every_exit_code_and_error_class() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text()
    for code in o41.ExitCode:
        assert re.search(rf"^\|\s*{int(code)}\s*\|\s*`?{code.name}`?", doc, re.M), code
    for name in ("Fenced", "Unauthenticated", "Forbidden", "HasCheckpoints", "IntegrityError"):
        assert name in doc
