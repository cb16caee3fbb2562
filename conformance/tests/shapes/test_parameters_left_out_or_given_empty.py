"""The contract's two small points on parameters: ``version`` defaults to ``latest`` on
``versions/read`` only (READ-1.a; a write or a delete without it is a missing field, API-1.f),
and a parameter given empty (``artifact=``) is malformed, not absent (API-1.f): 400
``invalid_argument`` that changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check_equal

SHA = "0" * 64


@pytest.mark.rule("READ-1.a", "API-1.f")
def test_version_defaults_to_latest_on_reads_only(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("version-left-out"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 11))
    commit_ok(o41_api, a, "step-00000002", make_files({"m": 9}, 12))
    body = expect_ok(o41_api.call("GET", "/versions/read", params={"artifact": a.artifact}),
                     "READ-1.a", "versions/read without version")
    check_equal(body.get("version"), "step-00000002", "READ-1.a",
                "the version read when version is left out")
    before = snapshot(o41_api, a.artifact)
    # Were ``version`` to default to latest here too, the write would be 409
    # not_after_latest and the delete 409 is_latest: only 400 says it is a missing field.
    write = o41_api.call("POST", "/versions/write", body={
        "artifact": a.artifact, "token": a.token,
        "files": [{"name": "m", "size": 1, "sha256": SHA}]})
    expect_error(write, 400, "invalid_argument", "API-1.f", "versions/write without version")
    delete = o41_api.call("POST", "/versions/delete", body={
        "artifact": a.artifact, "token": a.token})
    expect_error(delete, 400, "invalid_argument", "API-1.f", "versions/delete without version")
    expect_unchanged(o41_api, a.artifact, before, "API-1.f", "the write and delete without version")


@pytest.mark.rule("API-1.f")
def test_parameters_given_empty_are_malformed(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("given-empty"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 13))
    art = a.artifact
    queries: list[tuple[str, dict[str, str]]] = [
        ("/versions/read", {"artifact": ""}),
        ("/versions/read", {"artifact": art, "version": ""}),
        ("/versions/read", {"artifact": art, "place": ""}),
        ("/versions/read", {"artifact": art, "urls": ""}),
        ("/versions/list", {"artifact": ""}),
        ("/versions/list", {"artifact": art, "place": ""}),
        ("/artifacts/read", {"artifact": ""}),
    ]
    if o41_env.capability("usage")[0]:
        queries.append(("/usage/read", {"artifact": ""}))  # absent means "all the key reads"
    for path, params in queries:
        reply = o41_api.call("GET", path, params=params)
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"{reply.line()} (given empty)")
    good = {"name": "m", "size": 1, "sha256": SHA}
    # An upload of step 2 left open: each commit below names it with one field given empty.
    staged = expect_ok(o41_api.write(art, a.token, "step-00000002", [good]), "VER-4",
                       "write of step 2")
    upload = staged.get("upload")
    before = snapshot(o41_api, art)
    write = {"artifact": art, "token": a.token, "version": "step-00000002", "files": [good]}
    commit = {"artifact": art, "token": a.token, "upload": upload}
    delete = {"artifact": art, "token": a.token, "version": "step-00000001"}
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("/artifacts/open", {"artifact": art, "resume": "latest", "holder": ""}),
        ("/artifacts/open", {"artifact": art, "resume": ""}),
        ("/artifacts/open", {"artifact": "", "resume": "latest"}),
        ("/artifacts/open", {"artifact": art, "resume": "latest", "place": ""}),
        *(("/versions/write", {**write, field: ""}) for field in ("artifact", "token",
                                                                   "version", "upload")),
        ("/versions/write", {**write, "files": [{**good, "name": ""}]}),
        *(("/versions/commit", {**commit, field: ""}) for field in commit),
        *(("/versions/delete", {**delete, field: ""}) for field in delete),
    ]
    for path, body in bodies:
        reply = o41_api.call("POST", path, body=body)
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"{path} with {body} (given empty)")
    expect_unchanged(o41_api, art, before, "API-1.f", "the calls with a field given empty")
