"""The storage interface: both backends store, range-read and delete the same way."""

from __future__ import annotations

import io
import os
import time
import uuid

import pytest

from emulator.storage import ObjectMissing, Storage, TooLarge
from emulator.storage.files import FileStorage
from emulator.storage.s3 import S3Storage
from tests.support.backends import BACKENDS


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path) -> tuple[Storage, str]:
    bucket = f"unit-{uuid.uuid4().hex[:10]}"
    if request.param == "fs":
        s: Storage = FileStorage(tmp_path / "buckets", chunk_size=4096)
    else:
        server = request.getfixturevalue("s3_server")
        s = S3Storage(server.endpoint, server.access_key, server.secret_key, chunk_size=4096)
    s.ensure_bucket(bucket)
    return s, bucket


def test_put_then_read_ranges_exactly(store):
    s, bucket = store
    data = os.urandom(50_000)
    s.put(bucket, "a/b/c.bin", io.BytesIO(data))
    assert s.size(bucket, "a/b/c.bin") == len(data)
    assert b"".join(s.read(bucket, "a/b/c.bin", 0, len(data))) == data
    assert b"".join(s.read(bucket, "a/b/c.bin", 12_345, 10_000)) == data[12_345:22_345]
    chunks = list(s.read(bucket, "a/b/c.bin", 0, len(data)))
    assert max(len(c) for c in chunks) <= 4096 * 16  # bounded, never the whole file at once


def test_missing_object_raises(store):
    s, bucket = store
    with pytest.raises(ObjectMissing):
        s.size(bucket, "nope")


def test_failed_put_leaves_no_object(store):
    s, bucket = store

    class Exploding(io.RawIOBase):
        def read(self, n: int = -1) -> bytes:
            raise TooLarge()

    with pytest.raises(TooLarge):
        s.put(bucket, "x/partial.bin", Exploding())
    with pytest.raises(ObjectMissing):
        s.size(bucket, "x/partial.bin")


def test_delete_prefix_removes_that_prefix_only(store):
    s, bucket = store
    for key in ("p/1", "p/2", "pq/1", "q/1"):
        s.put(bucket, key, io.BytesIO(b"x"))
    s.delete_prefix(bucket, "p/")
    for gone in ("p/1", "p/2"):
        with pytest.raises(ObjectMissing):
            s.size(bucket, gone)
    assert s.size(bucket, "pq/1") == s.size(bucket, "q/1") == 1


def test_ensure_bucket_tolerates_another_node_creating_it_first(store, monkeypatch):
    s, bucket = store
    if isinstance(s, S3Storage):
        # Both nodes asked before either created it, so this one's create comes second (a
        # real server refuses it with BucketAlreadyOwnedByYou; moto's accepts it).
        asked, real = [], s.client.bucket_exists

        def exists_after_the_first_answer(name: str) -> bool:
            asked.append(name)
            return len(asked) > 1 and real(name)

        monkeypatch.setattr(s.client, "bucket_exists", exists_after_the_first_answer)
    s.ensure_bucket(bucket)
    s.put(bucket, "k", io.BytesIO(b"x"))
    assert s.size(bucket, "k") == 1


def test_file_partials_are_reclaimed_only_when_stale(tmp_path):
    s = FileStorage(tmp_path / "buckets")
    s.ensure_bucket("one")
    partial = tmp_path / "buckets" / ".partial"
    stale, fresh = partial / "stale", partial / "fresh"
    stale.write_bytes(b"cut off by a crash")
    fresh.write_bytes(b"another process is still writing this")
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    assert s.reclaim_partials(["one"], older_than=600) == 1
    assert not stale.exists() and fresh.exists()


def test_s3_start_up_leaves_unfinished_multipart_uploads_to_the_server(s3_server):
    s = S3Storage(s3_server.endpoint, s3_server.access_key, s3_server.secret_key)
    bucket = f"unit-{uuid.uuid4().hex[:10]}"
    s.ensure_bucket(bucket)
    # A put() of a big body in flight on another node looks exactly like this.
    client = s3_server.boto3()
    client.create_multipart_upload(Bucket=bucket, Key="a/u1/k/model.bin")
    assert s.reclaim_partials([bucket], older_than=0) == 0
    uploads = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [u["Key"] for u in uploads] == ["a/u1/k/model.bin"]


def test_file_backend_never_escapes_its_bucket(tmp_path):
    s = FileStorage(tmp_path / "b")
    s.ensure_bucket("one")
    (tmp_path / "secret").write_bytes(b"s")
    with pytest.raises(ObjectMissing):
        s.size("one", "../../secret")
