"""AUTH-1..3: keys, scopes, and that a refused open changes nothing."""

from __future__ import annotations

import pytest

from tests.support.emulator_http import AWS, Box

ENDPOINTS = [
    ("POST", "/api/v1/artifacts/open"),
    ("POST", "/api/v1/versions/write"),
    ("POST", "/api/v1/versions/commit"),
    ("GET", "/api/v1/versions/read"),
    ("GET", "/api/v1/versions/list"),
    ("GET", "/api/v1/artifacts/read"),
    ("GET", "/api/v1/usage/read"),
]


@pytest.mark.parametrize("method, path", ENDPOINTS)
@pytest.mark.parametrize("key", [None, "ak_wrong", ""])
def test_every_endpoint_without_valid_key_is_unauthenticated(http, method, path, key):
    r = http.request(method, path, key=key, json={} if method == "POST" else None)
    assert (r.status, r.code) == (401, "unauthenticated")


def make_key(http, scopes) -> str:
    r = http.request("POST", "/_emulator/keys", key=None, json={"scopes": scopes})
    assert r.status == 201
    return r.body["key"]


def test_open_with_read_only_key_is_forbidden_and_changes_nothing(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    a.checkpoint("step-00000001")
    reader = make_key(http, [{"prefix": artifact.split("/")[0] + "/", "access": "read"}])
    r = Box(http, artifact, AWS, key=reader).open()
    assert (r.status, r.code) == (403, "forbidden")
    art = http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact}).body
    assert art["epoch"] == 1
    assert a.checkpoint("step-00000002").status == 200
    assert Box(http, artifact, AWS, key=reader).read().status == 200


def test_scopes_are_enforced_on_every_endpoint(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    a.checkpoint("step-00000001")
    outsider = make_key(http, [{"prefix": "elsewhere/", "access": "write"}])
    bodies = {
        "/api/v1/artifacts/open": {"artifact": artifact, "resume": "latest"},
        "/api/v1/versions/write": {"artifact": artifact, "token": a.token,
                                   "version": "step-00000002", "files": []},
        "/api/v1/versions/commit": {"artifact": artifact, "token": a.token, "upload": "x"},
    }
    for method, path in ENDPOINTS:
        params = {"artifact": artifact} if method == "GET" else None
        r = http.request(method, path, key=outsider, params=params, json=bodies.get(path))
        assert (r.status, r.code) == (403, "forbidden"), path


def test_usage_without_artifact_lists_only_readable_artifacts(http, artifact):
    a = Box(http, artifact, {"cloud": "oracle", "region": "x"})
    a.open()
    a.checkpoint("step-00000001")
    outsider = make_key(http, [{"prefix": "elsewhere/", "access": "read"}])
    u = http.request("GET", "/api/v1/usage/read", key=outsider).body
    assert u["transfers"] == [] and u["placements"] == []


def test_fork_needs_read_on_source_and_write_on_target(http, artifact):
    src = Box(http, artifact, AWS)
    src.open()
    src.checkpoint("step-00000001")
    project = artifact.split("/")[0]
    only_target = make_key(http, [{"prefix": f"{project}/fork", "access": "write"}])
    r = Box(http, f"{project}/fork-1", AWS, key=only_target).open(f"o41://{artifact}/step-00000001")
    assert (r.status, r.code) == (403, "forbidden")
    both = make_key(http, [{"prefix": f"{project}/fork", "access": "write"},
                           {"prefix": artifact, "access": "read"}])
    r = Box(http, f"{project}/fork-2", AWS, key=both).open(f"o41://{artifact}/step-00000001")
    assert r.status == 200


def test_write_scope_implies_read(http, artifact):
    writer = make_key(http, [{"prefix": artifact, "access": "write"}])
    box = Box(http, artifact, AWS, key=writer)
    box.open()
    box.checkpoint("step-00000001")
    assert box.read().status == 200
