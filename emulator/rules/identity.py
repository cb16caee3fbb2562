"""One storage per database: nodes that share metadata must see each other's bytes.

The first node to start on a database makes a storage identity, writes it as a marker
object into every bucket, and records it in the database. Every later start checks that its
own buckets hold that marker: a node whose storage is elsewhere (its own data dir beside a
shared PostgreSQL, another S3 endpoint) would acknowledge commits whose bytes the other
nodes cannot serve, so it refuses to start with one line instead.
"""

from __future__ import annotations

import io
import secrets

from .. import store
from ..state.backend import Backend
from ..storage import ObjectMissing

#: Outside every artifact's keys: an artifact's first part starts with a letter or digit.
MARKER_KEY = ".o41-storage-id"


class ForeignStorage(RuntimeError):
    """This node's buckets are not the storage the database's other nodes write to."""


def _marker(backend: Backend, bucket: str) -> str | None:
    try:
        return b"".join(backend.storage.read(bucket, MARKER_KEY, 0, 64)).decode()
    except (ObjectMissing, UnicodeDecodeError):
        return None


def check_storage_identity(backend: Backend, buckets: list[str]) -> None:
    """Record the storage identity on first start; refuse a storage without it after.

    One start at a time decides (the database's write lock, or an advisory lock under
    PostgreSQL), so two nodes starting together on a new database cannot both record one.
    A bucket without the marker (a location added since) gets it when another bucket of the
    same storage proves it is the database's."""
    conn = backend.conn()
    with store.transaction(conn):
        store.nodes.serialise_starts(conn)
        recorded = store.meta.storage_identity(conn)
        found = {b: _marker(backend, b) for b in buckets}
        if recorded is None:
            recorded = next((m for m in found.values() if m), None) or secrets.token_hex(16)
            store.meta.record_storage_identity(conn, recorded)
        elif recorded not in found.values():
            bucket = buckets[0]
            raise ForeignStorage(
                f"bucket {bucket} of this node's storage ({_where(backend)}) does not hold "
                "the bytes of the other nodes on its database (storage identity "
                f"{found[bucket] or 'missing'}, the database's is {recorded}): nodes that "
                "share a database need one storage, e.g. storage s3 on one endpoint")
        other = sorted(b for b, m in found.items() if m not in (None, recorded))
        if other:
            raise ForeignStorage(f"bucket {other[0]} belongs to another emulator's storage "
                                 f"(identity {found[other[0]]}, not {recorded})")
        for bucket, marker in found.items():
            if marker is None:
                backend.storage.put(bucket, MARKER_KEY, io.BytesIO(recorded.encode()))


def _where(backend: Backend) -> str:
    s = backend.settings
    return f"s3 at {s.s3_endpoint}" if s.storage == "s3" else f"fs under {s.data_dir}"
