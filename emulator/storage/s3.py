"""S3-compatible backend through the minio SDK: MinIO, SeaweedFS, or any S3 server
(tested against SeaweedFS and moto's server, docs/emulator.md).

An S3 server that is down, slow or answering 5xx is an outage, not a bug: every call ends
in `StorageUnavailable` within bounded time (the web layer answers it 503 with Retry-After).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Iterator
from typing import BinaryIO, ParamSpec, TypeVar
from urllib.parse import urlparse

import certifi
import urllib3
from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import MinioException, S3Error
from urllib3.util import Retry, Timeout

from .base import ObjectMissing, Storage, StorageUnavailable

# S3 multipart parts must be at least 5 MiB; 16 MiB keeps the part count low for big files.
PART_SIZE = 16 << 20
# minio's own client waits 5 minutes to connect or for an answer, and retries 5 times: a
# stopped S3 server held a call for minutes. These bound a call's wait on a dead server to
# seconds, while a 16 MiB part to a slow but live one still has a minute.
CONNECT_TIMEOUT, READ_TIMEOUT = 5.0, 60.0
RETRIES = Retry(total=2, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504])
_MISSING = ("NoSuchKey", "NoSuchObject", "NotFound", "ResourceNotFound")

P = ParamSpec("P")
R = TypeVar("R")


def _outage_of(exc: Exception) -> bool:
    """Errors of reaching or of a failing server (no answer, a cut one, 5xx), as opposed to
    what the server refused (a missing key, a denied one), which stay what they are."""
    if isinstance(exc, urllib3.exceptions.HTTPError):  # refused, reset, timed out, retried out
        return True
    if isinstance(exc, S3Error):
        return exc.response is not None and exc.response.status >= 500
    return isinstance(exc, MinioException)  # ServerError (5xx) and a non-XML answer


def _outages(fn: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (urllib3.exceptions.HTTPError, MinioException) as exc:
            if _outage_of(exc):
                raise StorageUnavailable(f"S3 storage: {type(exc).__name__}: {exc}") from exc
            raise
    return call


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
            http_client=urllib3.PoolManager(
                timeout=Timeout(connect=CONNECT_TIMEOUT, read=READ_TIMEOUT), maxsize=10,
                cert_reqs="CERT_REQUIRED", retries=RETRIES,
                ca_certs=os.environ.get("SSL_CERT_FILE") or certifi.where()),
        )
        self.chunk_size = chunk_size

    @_outages
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

    @_outages
    def put(self, bucket: str, key: str, stream: BinaryIO) -> None:
        self.client.put_object(bucket, key, stream, length=-1, part_size=PART_SIZE)

    @_outages
    def size(self, bucket: str, key: str) -> int:
        try:
            return self.client.stat_object(bucket, key).size or 0
        except S3Error as exc:
            if exc.code in _MISSING:
                raise ObjectMissing(key) from None
            raise

    @_outages
    def read(self, bucket: str, key: str, start: int, length: int) -> Iterator[bytes]:
        if length <= 0:
            return iter(())
        # Asked for now, not at the first chunk: an outage is a 503 before any header left.
        try:
            response = self.client.get_object(bucket, key, offset=start, length=length)
        except S3Error as exc:
            if exc.code in _MISSING:
                raise ObjectMissing(key) from None
            raise

        def chunks() -> Iterator[bytes]:
            try:
                yield from response.stream(self.chunk_size)
            finally:
                response.close()
                response.release_conn()

        return chunks()

    @_outages
    def delete(self, bucket: str, key: str) -> None:
        self.client.remove_object(bucket, key)  # S3 deletes are idempotent

    @_outages
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
