"""Hostile and malformed input: each gets the contract's error code and changes nothing."""

from __future__ import annotations

import pytest

from emulator import create_app
from tests.support.backends import make_settings
from tests.support.emulator_http import AWS, Box, Http


def snapshot(http: Http) -> dict:
    return http.request("GET", "/_emulator/state", key=None).body


@pytest.fixture
def small(tmp_path, request) -> Http:
    """An emulator with small limits, so 'too large' is cheap to reach."""
    settings = make_settings(tmp_path, request, max_json_bytes=2048, max_file_size=100,
                             max_files=3)
    return Http("http://localhost", create_app(settings).test_client())


@pytest.mark.parametrize("name", [
    "../etc", "a/../../b", "a/b/c", "/abs/x", "a\\b/c", "%2e%2e/x", "a/.", "./a", "a/",
    "x" * 300 + "/y", "ünï/code", "a /b", "", 7, None, ["a/b"],
])
def test_open_with_hostile_artifact_name_is_invalid_and_creates_nothing(http, name):
    before = snapshot(http)
    r = http.request("POST", "/api/v1/artifacts/open", json={"artifact": name})
    assert (r.status, r.code) == (400, "invalid_argument")
    assert snapshot(http) == before


@pytest.mark.parametrize("path", ["/api/v1/versions/read", "/api/v1/versions/list",
                                  "/api/v1/artifacts/read", "/api/v1/usage/read"])
def test_reads_with_traversal_artifact_are_invalid(http, path):
    r = http.request("GET", path, params={"artifact": "../../etc/passwd"})
    assert (r.status, r.code) == (400, "invalid_argument")


def test_oversized_json_body_is_payload_too_large(small):
    before = snapshot(small)
    r = small.request("POST", "/api/v1/artifacts/open",
                      json={"artifact": "a/b", "holder": "h" * 5000})
    assert (r.status, r.code) == (413, "payload_too_large")
    assert snapshot(small) == before


def test_deeply_nested_json_is_invalid_not_a_crash(http):
    body = b"[" * 100_000 + b"]" * 100_000
    r = http.request("POST", "/api/v1/artifacts/open", data=body,
                     headers={"Content-Type": "application/json"})
    assert r.status in (400, 413) and r.code in ("invalid_argument", "payload_too_large")


@pytest.mark.parametrize("files, status, code", [
    ([{"name": "a", "size": 101, "sha256": "0" * 64}], 413, "payload_too_large"),
    ([{"name": f"f{i}", "size": 1, "sha256": "0" * 64} for i in range(4)], 413,
     "payload_too_large"),
    ([{"name": "a", "size": -5, "sha256": "0" * 64}], 400, "invalid_argument"),
    ([{"name": "a", "size": 1.5, "sha256": "0" * 64}], 400, "invalid_argument"),
    ([{"name": "a", "size": True, "sha256": "0" * 64}], 400, "invalid_argument"),
    ([{"name": "a", "size": 1, "sha256": "0" * 63}], 400, "invalid_argument"),
    ([{"name": "a", "size": 1, "sha256": "G" * 64}], 400, "invalid_argument"),
    ([{"name": "a", "size": 1}], 400, "invalid_argument"),
    ([{"name": "../../x", "size": 1, "sha256": "0" * 64}], 400, "invalid_argument"),
    ([{"name": "a", "size": 1, "sha256": "0" * 64}, {"name": "a/b", "size": 1,
                                                     "sha256": "0" * 64}],
     400, "invalid_argument"),
])
def test_write_with_hostile_file_list_is_refused_and_changes_nothing(small, files, status, code):
    box = Box(small, "p/hostile", AWS)
    box.open()
    before = snapshot(small)
    r = small.request("POST", "/api/v1/versions/write", json={
        "artifact": box.artifact, "token": box.token, "version": "step-00000001",
        "files": files})
    assert (r.status, r.code) == (status, code)
    assert snapshot(small) == before


@pytest.mark.parametrize("params", [
    {"urls": "maybe"}, {"place": "nowhere"}, {"place": "a/b/c"}, {"version": "step-1"},
    {"version": "../step-00000001"},
])
def test_read_with_malformed_query_is_invalid(http, artifact, params):
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001")
    r = http.request("GET", "/api/v1/versions/read", params={"artifact": artifact, **params})
    assert (r.status, r.code) == (400, "invalid_argument")


@pytest.mark.parametrize("place", [{"cloud": 1, "region": "x"}, {"cloud": "aws"}, "aws",
                                   {"cloud": "a/b", "region": "c"}, ["aws", "us-east-1"],
                                   "aws/us-east-1"])
def test_open_with_malformed_place_is_invalid_and_fences_nobody(http, artifact, place):
    a = Box(http, artifact, AWS)
    a.open()
    r = http.request("POST", "/api/v1/artifacts/open",
                     json={"artifact": artifact, "resume": "latest", "place": place})
    assert (r.status, r.code) == (400, "invalid_argument")
    assert a.checkpoint("step-00000001").status == 200


def test_data_plane_path_traversal_is_refused(http, artifact):
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001")
    url = box.read().body["files"][0]["url"]
    base, query = url.split("?")
    sneaky = base.rsplit("/", 1)[0] + "/../../../../metadata.sqlite3?" + query
    assert http.request("GET", sneaky, key=None).status in (403, 404)


def test_unknown_key_is_never_echoed(http):
    secret = "ak_this-is-a-secret-value"
    r = http.request("GET", "/api/v1/usage/read", key=secret)
    assert r.status == 401 and secret not in r.content.decode()


def test_admin_endpoints_need_the_admin_key_when_set(tmp_path, request):
    settings = make_settings(tmp_path, request, admin_key="ak_admin_secret")
    http = Http("http://localhost", create_app(settings).test_client())
    assert http.request("GET", "/_emulator/health", key=None).status == 200
    no_key = http.request("POST", "/_emulator/reset", key=None)
    assert (no_key.status, no_key.code) == (401, "unauthenticated")
    wrong = http.request("GET", "/_emulator/state", key="ak_local")
    assert (wrong.status, wrong.code) == (403, "forbidden")
    ok = http.request("POST", "/_emulator/keys", key="ak_admin_secret", json={})
    assert ok.status == 201


@pytest.mark.parametrize("payload", [
    {"artifact": "p/typo", "resme": "latest"},
    {"artifact": "p/typo", "resume": "latest", "place": None, "holder": "h", "extra": 1},
])
def test_open_with_unknown_field_is_invalid_so_typos_never_start_fresh(http, payload):
    before = snapshot(http)
    r = http.request("POST", "/api/v1/artifacts/open", json=payload)
    assert (r.status, r.code) == (400, "invalid_argument") and "unknown field" in \
        r.body["error"]["message"]
    assert snapshot(http) == before


@pytest.mark.parametrize("query", ["artifact=a/b&verison=latest", "artifact=a/b&artifact=c/d"])
def test_read_with_unknown_or_repeated_query_parameter_is_invalid(http, query):
    r = http.request("GET", "/api/v1/versions/read?" + query)
    assert (r.status, r.code) == (400, "invalid_argument")


def test_file_entry_with_unknown_key_is_invalid(http, artifact):
    box = Box(http, artifact, AWS)
    box.open()
    r = http.request("POST", "/api/v1/versions/write", json={
        "artifact": artifact, "token": box.token, "version": "step-00000001",
        "files": [{"name": "a", "size": 1, "sha256": "0" * 64, "mode": "0644"}]})
    assert (r.status, r.code) == (400, "invalid_argument")


@pytest.mark.parametrize("raw", [
    b'{"artifact": "p/a", "holder": "h\\udc00"}',
    b'{"artifact": "p/a\\ud800", "holder": "h"}',
    b'{"artifact": "p/a", "holder": "\\uDBFF"}',
    b'{"artifact": "p/a", "\\ud800": 1}',
])
def test_open_with_a_lone_surrogate_is_invalid_not_a_crash(http, raw):
    before = snapshot(http)
    r = http.request("POST", "/api/v1/artifacts/open", data=raw,
                     headers={"Content-Type": "application/json"})
    assert (r.status, r.code) == (400, "invalid_argument")
    assert snapshot(http) == before


def test_a_surrogate_pair_is_a_valid_character(http, artifact):
    raw = b'{"artifact": "' + artifact.encode() + b'", "holder": "h\\ud83d\\ude00"}'
    r = http.request("POST", "/api/v1/artifacts/open", data=raw,
                     headers={"Content-Type": "application/json"})
    assert r.status == 200 and r.body["holder"] == "h\U0001f600"


@pytest.mark.parametrize("name", [
    "a\ud800b", "y" * 256, "\u00e9" * 200, "d/" + "y" * 256, "/".join(["a" * 200] * 4),
])
def test_write_of_a_file_name_no_backend_can_store_is_invalid(http, artifact, name):
    box = Box(http, artifact, AWS)
    box.open()
    before = snapshot(http)
    r = http.request("POST", "/api/v1/versions/write", json={  # JSON escapes a surrogate
        "artifact": artifact, "token": box.token, "version": "step-00000001",
        "files": [{"name": name, "size": 1, "sha256": "0" * 64}]})
    assert (r.status, r.code) == (400, "invalid_argument")
    assert snapshot(http) == before


def test_longest_allowed_names_upload_and_commit_on_every_backend(http):
    from emulator.core.names import MAX_FILE_NAME_BYTES, MAX_SEGMENT_BYTES

    artifact = "p" * 128 + "/" + "n" * 128
    name = "/".join(["\u00e9" * 127] * 2) + "/" + "y" * (MAX_FILE_NAME_BYTES - 2 * 255)
    assert len(name.encode()) == MAX_FILE_NAME_BYTES
    files = {name: b"longest", "z" * MAX_SEGMENT_BYTES: b"widest"}
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    assert box.checkpoint("step-00000001", files).status == 200
    for f in box.read().body["files"]:
        assert http.request("GET", f["url"], key=None).content == files[f["name"]]


def test_write_of_ten_thousand_nested_names_is_accepted_and_a_clash_is_found(http, artifact):
    box = Box(http, artifact, AWS)
    box.open()
    files = [{"name": f"layer{i // 100}/shard-{i}.bin", "size": 1, "sha256": "0" * 64}
             for i in range(9_999)]
    ok = http.request("POST", "/api/v1/versions/write", json={
        "artifact": artifact, "token": box.token, "version": "step-00000001", "files": files})
    assert ok.status == 200 and len(ok.body["files"]) == 9_999
    clash = [*files[:9_998], {"name": "layer5", "size": 1, "sha256": "0" * 64}]
    r = http.request("POST", "/api/v1/versions/write", json={
        "artifact": artifact, "token": box.token, "version": "step-00000002", "files": clash})
    assert (r.status, r.code) == (400, "invalid_argument") and "layer5" in r.body["error"][
        "message"]


def test_existing_key_cannot_be_rescoped_without_the_admin_key(http, artifact):
    read_only = [{"prefix": "", "access": "read"}]
    made = http.request("POST", "/_emulator/keys", key=None,
                        json={"key": "ak_reader_x", "scopes": read_only})
    assert made.status == 201
    again = http.request("POST", "/_emulator/keys", key=None,
                         json={"key": "ak_reader_x", "scopes": read_only})
    assert again.status == 201  # the same scopes again change nothing
    escalate = http.request("POST", "/_emulator/keys", key=None,
                            json={"key": "ak_reader_x", "scopes": None})
    assert (escalate.status, escalate.code) == (403, "forbidden")
    r = Box(http, artifact, AWS, key="ak_reader_x").open()
    assert (r.status, r.code) == (403, "forbidden")


def test_admin_key_may_rescope_an_existing_key(tmp_path, request, artifact):
    settings = make_settings(tmp_path, request, admin_key="ak_admin_secret")
    http = Http("http://localhost", create_app(settings).test_client())
    for scopes in ([{"prefix": "", "access": "read"}], None):
        r = http.request("POST", "/_emulator/keys", key="ak_admin_secret",
                         json={"key": "ak_promoted", "scopes": scopes})
        assert r.status == 201
    assert Box(http, artifact, AWS, key="ak_promoted").open().status == 200
