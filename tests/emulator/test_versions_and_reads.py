"""VER-1..4 and READ-1..4: names, immutability, completeness, signed ranged reads."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import text

from tests.support.emulator_http import AWS, Box, sha


@pytest.fixture
def box(http, artifact) -> Box:
    b = Box(http, artifact, AWS)
    assert b.open().status == 200
    return b


@pytest.mark.parametrize("version", ["step-1", "step-000000001", "v1", "step-0000000a", "", None])
def test_write_with_malformed_version_name_is_invalid(box, version):
    r = box.write(version, {"a": b"x"})
    assert (r.status, r.code) == (400, "invalid_argument")


@pytest.mark.parametrize(
    "name", ["/abs", "a/../b", "./a", "a//b", "a/", "..", "", "a\\b", "a\x00b"]
)
def test_write_with_unsafe_file_name_is_invalid(box, name):
    r = box.write("step-00000001", {name: b"x"})
    assert (r.status, r.code) == (400, "invalid_argument")


@pytest.mark.parametrize(
    "files",
    [
        [{"name": "a", "size": -1, "sha256": "0" * 64}],
        [{"name": "a", "size": 1, "sha256": "XYZ"}],
        [{"name": "a", "size": "1", "sha256": "0" * 64}],
        [{"name": "a", "size": 1, "sha256": "0" * 64}] * 2,
        "not a list",
    ],
)
def test_write_with_bad_file_list_is_invalid(box, files):
    r = box.http.request("POST", "/api/v1/versions/write", json={
        "artifact": box.artifact, "token": box.token, "version": "step-00000001", "files": files})
    assert (r.status, r.code) == (400, "invalid_argument")


def test_write_declaring_size_over_limit_is_payload_too_large(box):
    r = box.http.request("POST", "/api/v1/versions/write", json={
        "artifact": box.artifact, "token": box.token, "version": "step-00000001",
        "files": [{"name": "a", "size": 1 << 50, "sha256": "0" * 64}]})
    assert (r.status, r.code) == (413, "payload_too_large")


def test_nested_file_names_round_trip(box):
    files = {"model/weights.bin": b"w" * 100, "optim/state.pt": b"o" * 7, "meta.json": b"{}"}
    assert box.checkpoint("step-00000001", files).status == 200
    v = box.read().body
    assert sorted(f["name"] for f in v["files"]) == sorted(files)
    for f in v["files"]:
        assert box.http.request("GET", f["url"], key=None).content == files[f["name"]]


def test_commit_existing_version_name_refused(box):
    assert box.checkpoint("step-00000100").status == 200
    r = box.write("step-00000100", {"a": b"other"})
    assert (r.status, r.code) == (409, "version_exists")


def test_second_commit_of_same_upload_is_version_exists(box):
    files = {"a": b"1"}
    w = box.write("step-00000001", files)
    box.upload(w, files)
    assert box.commit(w.body["upload"]).status == 200
    r = box.commit(w.body["upload"])
    assert (r.status, r.code) == (409, "version_exists")


def test_write_not_after_latest_refused(box):
    box.checkpoint("step-00000200")
    r = box.write("step-00000100", {"a": b"x"})
    assert (r.status, r.code) == (409, "not_after_latest")


def test_commit_of_racing_uploads_keeps_first_and_refuses_lower_step(box):
    f = {"a": b"x"}
    low, high = box.write("step-00000100", f), box.write("step-00000200", f)
    box.upload(low, f)
    box.upload(high, f)
    assert box.commit(high.body["upload"]).status == 200
    r = box.commit(low.body["upload"])
    assert (r.status, r.code) == (409, "not_after_latest")


def test_commit_without_every_file_is_incomplete_and_invisible(box):
    files = {"a": b"1", "b": b"2"}
    w = box.write("step-00000001", files)
    box.http.request("PUT", w.body["files"][0]["url"], key=None, data=files["a"])
    r = box.commit(w.body["upload"])
    assert (r.status, r.code) == (409, "incomplete")
    assert box.read().status == 404
    listed = box.http.request("GET", "/api/v1/versions/list", params={"artifact": box.artifact})
    assert listed.body == {"versions": []}


def test_commit_with_wrong_bytes_is_incomplete(box):
    files = {"a": b"right"}
    w = box.write("step-00000001", files)
    box.http.request("PUT", w.body["files"][0]["url"], key=None, data=b"wrong")
    r = box.commit(w.body["upload"])
    assert (r.status, r.code) == (409, "incomplete")


def test_put_longer_than_declared_is_payload_too_large(box):
    w = box.write("step-00000001", {"a": b"12345"})
    r = box.http.request("PUT", w.body["files"][0]["url"], key=None, data=b"123456")
    assert (r.status, r.code) == (413, "payload_too_large")


def test_zero_byte_file_round_trips(box):
    assert box.checkpoint("step-00000001", {"empty": b""}).status == 200
    v = box.read().body
    assert v["size"] == 0 and v["files"][0]["sha256"] == sha(b"")
    assert box.http.request("GET", v["files"][0]["url"], key=None).content == b""


def test_read_latest_is_highest_step_and_unknown_version_not_found(box):
    for step in (1, 5, 30):
        box.checkpoint(f"step-{step:08d}")
    assert box.read().body["version"] == "step-00000030"
    assert box.read("step-00000005").body["step"] == 5
    r = box.read("step-00000006")
    assert (r.status, r.code) == (404, "not_found")
    r = box.http.request("GET", "/api/v1/versions/read", params={"artifact": "no/such"})
    assert (r.status, r.code) == (404, "not_found")


def test_list_versions_in_step_order_without_files(box):
    for step in (3, 10, 200):
        box.checkpoint(f"step-{step:08d}")
    listed = box.http.request("GET", "/api/v1/versions/list", params={"artifact": box.artifact})
    assert [v["step"] for v in listed.body["versions"]] == [3, 10, 200]
    assert all("files" not in v for v in listed.body["versions"])


def test_read_without_place_has_null_route(box):
    box.checkpoint("step-00000001")
    v = box.read(urls=False).body
    assert v["route"] is None and v["cross_cloud"] is None
    assert all("url" not in f for f in v["files"]) and "urls_expire_at" not in v


def test_ranged_gets_reassemble_exactly_and_meter_bytes_sent(box):
    data = bytes(range(256)) * 40  # 10 KiB
    box.checkpoint("step-00000001", {"blob": data})
    url = box.read(place="gcp/europe-west4").body["files"][0]["url"]
    parts, step = [], 1000
    for start in range(0, len(data), step):
        end = min(start + step, len(data)) - 1
        r = box.http.request("GET", url, key=None, headers={"Range": f"bytes={start}-{end}"})
        assert r.status == 206
        assert r.headers["Content-Range"] == f"bytes {start}-{end}/{len(data)}"
        parts.append(r.content)
    assert b"".join(parts) == data
    tail = box.http.request("GET", url, key=None, headers={"Range": "bytes=-10"})
    assert tail.status == 206 and tail.content == data[-10:]
    reads = [t for t in box.usage().body["transfers"] if t["direction"] == "read"]
    assert len(reads) == 1 and reads[0]["bytes"] == len(data) + 10


@pytest.mark.parametrize("header", ["bytes=99999-", "bytes=5-1", "items=0-1", "bytes=0-1,4-5",
                                    "garbage"])
def test_unsatisfiable_or_malformed_range_is_416(box, header):
    box.checkpoint("step-00000001", {"blob": b"0123456789"})
    url = box.read().body["files"][0]["url"]
    r = box.http.request("GET", url, key=None, headers={"Range": header})
    assert r.status == 416


def test_head_reports_size_without_metering(box):
    box.checkpoint("step-00000001", {"blob": b"0123456789"})
    url = box.read(place="aws/us-east-1").body["files"][0]["url"]
    r = box.http.request("HEAD", url, key=None)
    assert r.status == 200 and r.headers["Content-Length"] == "10"
    assert box.usage().body["routes"]["local"]["read_bytes"] == 0


def test_signed_url_on_another_path_or_tampered_is_forbidden(box):
    box.checkpoint("step-00000001", {"a": b"1", "b": b"2"})
    files = box.read().body["files"]
    url_a, url_b = files[0]["url"], files[1]["url"]
    moved = url_b.split("?")[0] + "?" + url_a.split("?")[1]
    assert box.http.request("GET", moved, key=None).status == 403
    tampered = url_a[:-3] + ("AAA" if not url_a.endswith("AAA") else "BBB")
    assert box.http.request("GET", tampered, key=None).status == 403
    assert box.http.request("GET", url_a.split("?")[0], key=None).status == 403
    assert box.http.request("PUT", url_a, key=None, data=b"1").status == 403


def test_expired_signed_url_is_forbidden(http, artifact, app, monkeypatch):
    box = Box(http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000001", {"a": b"1"})
    url = box.read().body["files"][0]["url"]
    backend = app.extensions["o41"]
    real = backend.now  # the database's clock, which every node compares expiry against
    monkeypatch.setattr(backend, "now", lambda: real() + 3601)
    r = http.request("GET", url, key=None)
    assert (r.status, r.code) == (403, "forbidden")


def test_expired_uncommitted_upload_is_reclaimed_with_its_bytes(http, app, artifact):
    from emulator.rules.versions import reclaim_expired_uploads

    box = Box(http, artifact, AWS)
    box.open()
    files = {"a": b"abandoned"}
    w = box.write("step-00000001", files)
    box.upload(w, files)
    backend = app.extensions["o41"]
    (key,) = backend.conn().execute(
        text("SELECT object_key FROM upload_files WHERE upload_id = :upload"),
        {"upload": w.body["upload"]}).one()
    assert reclaim_expired_uploads(backend) == 0
    backend.now = lambda: 10**12  # far past every upload's expiry
    assert reclaim_expired_uploads(backend) == 1
    r = box.commit(w.body["upload"])
    assert (r.status, r.code) == (404, "not_found")
    from emulator.storage import ObjectMissing

    with pytest.raises(ObjectMissing):
        backend.storage.size(backend.location("aws/us-east-1").bucket, key)


def test_usage_counts_a_download_as_soon_as_the_client_has_it(live_factory, artifact):
    import requests

    box = Box(live_factory().http, artifact, AWS)
    box.open()
    data = os.urandom(300_000)
    box.checkpoint("step-00000001", {"blob": data})
    url = box.read(place="gcp/europe-west4").body["files"][0]["url"]
    for n in range(1, 21):  # read usage right after each download: no wait, no retry
        assert requests.get(url, timeout=30).content == data
        reads = [t for t in box.usage().body["transfers"] if t["direction"] == "read"]
        assert [t["bytes"] for t in reads] == [n * len(data)]
