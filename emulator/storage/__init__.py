"""Region storage: one small interface, two backends (folders, or S3 through minio)."""

from __future__ import annotations

from .base import ObjectMissing, Storage, StorageUnavailable, TooLarge

__all__ = ["ObjectMissing", "Storage", "StorageUnavailable", "TooLarge", "make_storage",
           "storage_sizes"]


def storage_sizes(storage: Storage, bucket: str, keys: list[str]) -> dict[str, int | None]:
    """Each object's size, None when it is missing; looked up eight at a time when there
    are many (an S3 HEAD each)."""
    def one(key: str) -> int | None:
        try:
            return storage.size(bucket, key)
        except ObjectMissing:
            return None

    if len(keys) <= 4:
        return {k: one(k) for k in keys}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8, thread_name_prefix="o41-stat") as pool:
        return dict(zip(keys, pool.map(one, keys), strict=True))


def make_storage(settings) -> Storage:
    """Build the backend the settings name; minio is imported only when it is used."""
    if settings.storage == "fs":
        from .files import FileStorage

        return FileStorage(settings.data_dir / "buckets", settings.chunk_size)
    if settings.storage == "s3":
        from .s3 import S3Storage

        if not settings.s3_endpoint:
            raise ValueError("--storage s3 needs --s3-endpoint")
        return S3Storage(
            endpoint=settings.s3_endpoint,
            access_key=settings.s3_access_key or "",
            secret_key=settings.s3_secret_key or "",
            secure=settings.s3_secure,
            region=settings.s3_region,
            chunk_size=settings.chunk_size,
        )
    raise ValueError(f"unknown storage backend {settings.storage!r} (fs or s3)")
