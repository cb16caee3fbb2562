"""The storage interface: both backends store, range-read and delete the same way."""

from __future__ import annotations

import io
import os
import uuid

import pytest

from emulator.storage import ObjectMissing, Storage, TooLarge
from tests.conftest import BACKENDS


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path) -> tuple[Storage, str]:
    bucket = f"unit-{uuid.uuid4().hex[:10]}"
    if request.param == "fs":
        from emulator.storage.files import FileStorage

        s: Storage = FileStorage(tmp_path / "buckets", chunk_size=4096)
    else:
        from emulator.storage.s3 import S3Storage

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


def test_delete_prefix_and_wipe(store):
    s, bucket = store
    for key in ("p/1", "p/2", "q/1"):
        s.put(bucket, key, io.BytesIO(b"x"))
    s.delete_prefix(bucket, "p/")
    with pytest.raises(ObjectMissing):
        s.size(bucket, "p/1")
    assert s.size(bucket, "q/1") == 1
    s.wipe(bucket)
    with pytest.raises(ObjectMissing):
        s.size(bucket, "q/1")


def test_file_backend_never_escapes_its_bucket(tmp_path):
    from emulator.storage.files import FileStorage

    s = FileStorage(tmp_path / "b")
    s.ensure_bucket("one")
    (tmp_path / "secret").write_bytes(b"s")
    with pytest.raises(ObjectMissing):
        s.size("one", "../../secret")
