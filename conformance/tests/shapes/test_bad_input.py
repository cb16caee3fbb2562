"""Malformed names and bodies get 400 ``invalid_argument`` (API-1.f), from the error table:
"malformed names, bodies". Every bad artifact name stays under the run's project, so a key
scoped to it cannot answer 403 before looking at the name."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.client import Client
from conformance.env import Env

SHA = "0" * 64


def _bad_names(env: Env) -> list[str]:
    base = env.prefix
    return [f"{base}/", f"{base}/a/b", f"{base}/a b", f"{base}/a$b", f"{base}/a:b",
            f"{base}/.", f"{base}/.."]  # a path's own names are no part


@pytest.mark.rule("API-1.f")
def test_malformed_artifact_names_get_invalid_argument(o41_env: Env, o41_api: Client) -> None:
    for name in _bad_names(o41_env):
        for reply in (o41_api.open(name, "latest", None, "box-a"), o41_api.read(name),
                      o41_api.list(name), o41_api.artifact(name)):
            expect_error(reply, 400, "invalid_argument", "API-1.f", f"{reply.line()}")


@pytest.mark.rule("API-1.f")
def test_malformed_bodies_get_invalid_argument(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("bad-body"), "box-a")
    art, tok = a.artifact, a.token
    good = {"name": "m", "size": 1, "sha256": SHA}
    bodies: list[tuple[str, Any]] = [
        ("/artifacts/open", ["not", "an", "object"]),
        ("/artifacts/open", {"resume": "latest"}),
        ("/artifacts/open", {"artifact": 5, "resume": "latest"}),
        ("/artifacts/open", {"artifact": art, "resume": "latest", "holder": 7}),
        ("/artifacts/open", {"artifact": art, "resume": "latest", "place": "aws"}),
        ("/versions/write", {"artifact": art, "token": tok, "version": "step-00000001"}),
        ("/versions/write", {"artifact": art, "token": tok, "version": "step-00000001",
                             "files": "m"}),
        ("/versions/write", {"artifact": art, "version": "step-00000001", "files": [good]}),
        ("/versions/write", {"artifact": art, "token": tok, "version": "step-00000001",
                             "files": [{**good, "size": -1}]}),
        ("/versions/write", {"artifact": art, "token": tok, "version": "step-00000001",
                             "files": [{**good, "size": "1"}]}),
        ("/versions/write", {"artifact": art, "token": tok, "version": "step-00000001",
                             "files": [{"name": "m", "size": 1}]}),
        ("/versions/commit", {"artifact": art, "token": tok}),
    ]
    for path, body in bodies:
        reply = o41_api.call("POST", path, body=body)
        expect_error(reply, 400, "invalid_argument", "API-1.f", reply.line())
    raw = o41_api.call("POST", "/artifacts/open", headers={"Content-Type": "application/json"},
                       body=None)
    expect_error(raw, 400, "invalid_argument", "API-1.f", "open without a body")
