"""The interface every region storage backend implements.

Objects are written whole from a stream and read back as byte ranges, so the data plane
can stream files of any size through a bounded buffer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

DELETE_THREADS = 16  # prefixes deleted at once: each is two round trips to an S3 server


class ObjectMissing(Exception):
    """The object is not in the bucket."""


class StorageUnavailable(Exception):
    """The storage could not be reached, timed out or answered with a server error: the
    call did nothing the caller may count on, and may be repeated once storage is back."""


class TooLarge(Exception):
    """The stream being stored grew past its limit; nothing was kept."""


class Storage(ABC):
    #: delete_uploads() empties every bucket whole, so it needs no prefixes.
    empties_whole_buckets = False

    @abstractmethod
    def ensure_bucket(self, bucket: str) -> None:
        """Create the bucket if it does not exist (another node creating it at the same
        moment is not an error)."""

    @abstractmethod
    def put(self, bucket: str, key: str, stream: BinaryIO) -> None:
        """Store everything `stream.read()` yields; the object appears only when complete."""

    @abstractmethod
    def size(self, bucket: str, key: str) -> int:
        """Size in bytes, or ObjectMissing."""

    @abstractmethod
    def read(self, bucket: str, key: str, start: int, length: int) -> Iterator[bytes]:
        """Yield `length` bytes from `start` in bounded chunks."""

    @abstractmethod
    def delete(self, bucket: str, key: str) -> None:
        """Remove one object; a missing object is not an error."""

    @abstractmethod
    def delete_prefix(self, bucket: str, prefix: str) -> None:
        """Remove every object whose key starts with `prefix`: one upload's objects, when it
        is reclaimed or the emulator is reset."""

    def delete_uploads(self, prefixes: Collection[tuple[str, str]],
                       buckets: Collection[str]) -> None:
        """Remove every object under each (bucket, prefix): every upload a reset forgot.
        `buckets` are the buckets of every location, for a backend that can empty its own
        buckets whole. By default the prefixes are deleted a few at a time, each a listing
        and a batch delete of its own."""
        if not prefixes:
            return
        with ThreadPoolExecutor(max_workers=min(DELETE_THREADS, len(prefixes))) as pool:
            for done in [pool.submit(self.delete_prefix, b, p) for b, p in prefixes]:
                done.result()

    @abstractmethod
    def reclaim_partials(self, buckets: Collection[str], older_than: float) -> int:
        """Remove the bytes of writes that were cut off (a killed process) and have not been
        written to for `older_than` seconds; returns how many.

        Younger ones stay: they may be another emulator node's PUT still streaming into the
        same storage. A PUT older than an upload's lifetime cannot be made current any more
        (its upload has expired), so callers pass `upload_lifetime`."""
