"""S3-compatible backend through the minio SDK: MinIO, SeaweedFS, or any S3 server
(tested against SeaweedFS and moto's server, docs/emulator.md)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import BinaryIO
from urllib.parse import urlparse

from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import S3Error

from .base import ObjectMissing, Storage

# S3 multipart parts must be at least 5 MiB; 16 MiB keeps the part count low for big files.
PART_SIZE = 16 << 20


class S3Storage(Storage):
    def __init__(
        self,
        endpoint: str,
        access_key: str,
        secret_key: str,
        secure: bool = False,
        region: str = "us-east-1",
        chunk_size: int = 1 << 20,
    ) -> None:
        parsed = urlparse(endpoint if "://" in endpoint else f"http://{endpoint}")
        self.client = Minio(
            parsed.netloc,
            access_key=access_key,
            secret_key=secret_key,
            secure=secure or parsed.scheme == "https",
            region=region,
        )
        self.chunk_size = chunk_size

    def ensure_bucket(self, bucket: str) -> None:
        if self.client.bucket_exists(bucket):
            return
        try:
            self.client.make_bucket(bucket)
        except S3Error as exc:
            # Two nodes starting at once both saw no bucket; the second to create it loses.
            if exc.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
            if not self.client.bucket_exists(bucket):
                raise

    def put(self, bucket: str, key: str, stream: BinaryIO) -> None:
        self.client.put_object(bucket, key, stream, length=-1, part_size=PART_SIZE)

    def size(self, bucket: str, key: str) -> int:
        try:
            return self.client.stat_object(bucket, key).size or 0
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject", "NotFound", "ResourceNotFound"):
                raise ObjectMissing(key) from None
            raise

    def read(self, bucket: str, key: str, start: int, length: int) -> Iterator[bytes]:
        if length <= 0:
            return
        try:
            response = self.client.get_object(bucket, key, offset=start, length=length)
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                raise ObjectMissing(key) from None
            raise
        try:
            yield from response.stream(self.chunk_size)
        finally:
            response.close()
            response.release_conn()

    def delete(self, bucket: str, key: str) -> None:
        self.client.remove_object(bucket, key)  # S3 deletes are idempotent

    def delete_prefix(self, bucket: str, prefix: str) -> None:
        names = [
            DeleteObject(o.object_name)
            for o in self.client.list_objects(bucket, prefix=prefix, recursive=True)
            if o.object_name
        ]
        for error in self.client.remove_objects(bucket, names):
            raise RuntimeError(f"could not delete {error.name}: {error.message}")

    def reclaim_partials(self, buckets: Collection[str], older_than: float) -> int:
        """Nothing to reclaim from here. A failed put() aborts its own multipart upload;
        only a killed process leaves one, unseen in listings, and the emulator cannot tell it
        from another node's PUT in flight: the listing's `Initiated` time is the server's
        word, and moto's server reports one fixed date in 2010 for every upload. A bucket
        lifecycle rule (AbortIncompleteMultipartUpload) is the S3 way (docs/emulator.md)."""
        return 0
