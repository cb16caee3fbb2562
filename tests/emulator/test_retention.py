"""VER-7: the holder deletes versions that are not the latest; the latest is never deleted;
URLs given out before a delete keep serving until they expire, then the bytes go."""

from __future__ import annotations

import pytest

from tests.support.emulator_http import AWS, Box, Http, Reply

DELETE = "/api/v1/versions/delete"


def delete(box: Box, version: str, token: str | None = None, key: str | None = None) -> Reply:
    kwargs = {"key": key} if key else {}
    return box.http.request("POST", DELETE, json={
        "artifact": box.artifact, "token": token or box.token, "version": version}, **kwargs)


def stored_names(box: Box) -> list[str]:
    return [v["version"] for v in box.http.request(
        "GET", "/api/v1/versions/list", params={"artifact": box.artifact}).body["versions"]]


@pytest.fixture
def box(http: Http, artifact: str) -> Box:
    # From a GCP region without a location: written inter_region, so shown in placements.
    b = Box(http, artifact, {"cloud": "gcp", "region": "us-central1"})
    assert b.open().status == 200
    for step in (1, 2, 3):
        assert b.checkpoint(f"step-{step:08d}").status == 200
    return b


def test_deleting_an_older_version_removes_it_from_read_list_and_placements(box: Box) -> None:
    before = box.http.request("GET", "/api/v1/usage/read", params={"artifact": box.artifact})
    r = delete(box, "step-00000001")
    assert r.status == 200
    assert (r.body["artifact"], r.body["version"]) == (box.artifact, "step-00000001")
    assert r.body["deleted_at"].endswith("Z")
    assert (box.read("step-00000001").status, box.read("step-00000001").code) == (
        404, "not_found")
    assert stored_names(box) == ["step-00000002", "step-00000003"]
    after = box.http.request("GET", "/api/v1/usage/read", params={"artifact": box.artifact})
    [was], [now] = before.body["placements"], after.body["placements"]
    assert (was["versions"], now["versions"]) == (3, 2)
    assert now["bytes"] < was["bytes"]
    assert after.body["routes"]["inter_region"]["write_bytes"] == \
        before.body["routes"]["inter_region"]["write_bytes"]  # what was sent stays sent
    info = box.http.request("GET", "/api/v1/artifacts/read", params={"artifact": box.artifact})
    assert (info.body["versions"], info.body["latest"]) == (2, "step-00000003")


def test_the_latest_is_never_deleted(box: Box) -> None:
    r = delete(box, "step-00000003")
    assert (r.status, r.code) == (409, "is_latest")
    assert stored_names(box) == ["step-00000001", "step-00000002", "step-00000003"]


def test_deleting_twice_or_an_unknown_version_is_not_found(box: Box) -> None:
    assert delete(box, "step-00000002").status == 200
    for version in ("step-00000002", "step-00000077"):
        r = delete(box, version)
        assert (r.status, r.code) == (404, "not_found")
    assert stored_names(box) == ["step-00000001", "step-00000003"]


def test_a_deleted_step_is_never_reused(box: Box) -> None:
    assert delete(box, "step-00000002").status == 200
    again = box.write("step-00000002", {"x": b"x"})
    assert (again.status, again.code) == (409, "not_after_latest")


def test_a_fenced_holder_deletes_nothing(box: Box) -> None:
    newer = Box(box.http, box.artifact, AWS)
    assert newer.open().status == 200
    r = delete(box, "step-00000001")
    assert (r.status, r.code) == (409, "fenced")
    assert stored_names(box) == ["step-00000001", "step-00000002", "step-00000003"]
    assert delete(newer, "step-00000001").status == 200


def test_a_read_key_deletes_nothing(box: Box, app) -> None:
    app.test_client().post("/_emulator/keys", json={
        "key": "ak_ret_reader", "scopes": [{"prefix": box.artifact.split("/")[0] + "/",
                                            "access": "read"}]})
    r = delete(box, "step-00000001", key="ak_ret_reader")
    assert (r.status, r.code) == (403, "forbidden")
    assert len(stored_names(box)) == 3


@pytest.mark.parametrize("body,status", [
    ({"version": "step-1"}, 400),
    ({"version": "step-00000001", "token": "tok_unknown"}, 400),
    ({"version": "step-00000001", "extra": 1}, 400),
])
def test_malformed_deletes_are_invalid_and_change_nothing(box: Box, body: dict, status: int
                                                          ) -> None:
    r = box.http.request("POST", DELETE, json={
        "artifact": box.artifact, "token": box.token, **body})
    assert (r.status, r.code) == (status, "invalid_argument")
    assert len(stored_names(box)) == 3


def test_urls_given_before_a_delete_serve_until_they_expire_then_the_bytes_go(
    box: Box, app
) -> None:
    backend = app.extensions["o41"]
    signed = box.read("step-00000001").body["files"][0]
    assert delete(box, "step-00000001").status == 200
    got = box.http.request("GET", signed["url"], key=None, headers={"Range": "bytes=0-4"})
    assert (got.status, got.content) == (206, b"step-")
    assert box.http.request("GET", signed["url"], key=None).content == b"step-00000001" * 10
    real = backend.now
    backend.now = lambda: real() + backend.settings.url_lifetime + 5
    try:
        # The next delete reclaims what earlier deletes left once their URLs have expired.
        assert delete(box, "step-00000002").status == 200
        held = object_keys(backend, box)
        assert not [k for k in held if k.startswith("step-00000001 ")]
        assert [k for k in held if k.startswith("step-00000003 ")]  # the latest's stay
        assert box.http.request("GET", signed["url"], key=None).status == 403  # expired
    finally:
        backend.now = real


def object_keys(backend, box: Box) -> list[str]:
    """Which versions' objects the bucket still holds, named by the version they belong to."""
    from emulator import db

    U = db.uploads
    rows = backend.conn().execute(
        U.select().where(U.c.artifact == box.artifact)).mappings().all()
    held = []
    for row in rows:
        bucket = backend.location(row["location"]).bucket
        prefix = f"{row['artifact']}/{row['id']}/"
        if has_objects(backend.storage, bucket, prefix):
            held.append(f"{row['version']} {prefix}")
    return held


def has_objects(storage, bucket: str, prefix: str) -> bool:
    root = getattr(storage, "root", None)
    if root is not None:
        folder = root / bucket / prefix
        return folder.exists() and any(p.is_file() for p in folder.rglob("*"))
    return any(True for _ in storage.client.list_objects(bucket, prefix=prefix, recursive=True))
