"""Receiving the files of an upload, and reclaiming uploads never committed (VER-2, VER-4).

Like an object store, a PUT never overwrites anything: its body streams to an object key no
other PUT uses, and the object becomes the file's current bytes in ONE step, a transaction
that first re-checks that the upload is still open. A commit (one transaction too) records
the current keys, so once it has happened no PUT can change what a version points at, and a
PUT that finishes later is refused and its object deleted. Reclaiming marks expired uploads
in a transaction before deleting their bytes, so reclaim and commit cannot both win.
No lock is held while bytes stream: racing PUTs only meet in the short transactions.
"""

from __future__ import annotations

import logging
import secrets
from typing import BinaryIO, Protocol, cast

from .. import store
from ..core.errors import ApiError, Incomplete, InvalidArgument, NotFound, VersionExists
from ..state.backend import Backend
from ..storage import StorageUnavailable

log = logging.getLogger("o41.emulator")


def pause(point: str) -> None:
    """A named point where a test may hold one request to force an interleaving
    (tests monkeypatch `emulator.rules.uploads.pause`); in service it does nothing.

    Points: "put:stored" (the body is stored, not yet the file's current bytes) and
    "reclaim:marked" (expired uploads are marked, their bytes not yet deleted).
    """


def upload_prefix(artifact: str, upload_id: str) -> str:
    """Every object of one upload lives under this prefix (reclaimed as a whole)."""
    return f"{artifact}/{upload_id}/"


def new_object_key(artifact: str, upload_id: str, file_name: str) -> str:
    """A key no other PUT uses: a random folder keeps the file's own name last."""
    return f"{upload_prefix(artifact, upload_id)}{secrets.token_hex(8)}/{file_name}"


def every_upload_prefix(backend: Backend) -> list[tuple[str, str]]:
    """(bucket, prefix) of every upload the metadata records, in any state: every object
    the emulator ever wrote lies under one of them (versions keep their upload's objects).
    A location since removed from the settings is skipped: its bucket is not ours now."""
    rows = store.uploads.every(backend.conn())
    locations = backend.geography.locations
    return [(locations[r["location"]].bucket, upload_prefix(r["artifact"], r["id"]))
            for r in rows if r["location"] in locations]


class Body(Protocol):
    """A request body that counts and hashes what is read through it."""

    size: int

    def read(self, n: int = -1) -> bytes: ...

    def hexdigest(self) -> str: ...


def _require_open(
    backend: Backend, row, upload_id: str, expired: type[ApiError] = Incomplete
) -> None:
    """Only an open, unexpired upload may still receive bytes or be committed."""
    if row is None:
        raise NotFound(f"upload {upload_id} does not exist")
    if row["state"] in ("committed", "deleted"):
        raise VersionExists(
            f"upload {upload_id} is already committed; a committed version never changes"
        )
    if row["state"] == "reclaimed" or row["expires_at"] < backend.now():
        raise expired(
            f"upload {upload_id} expired before it was committed and its files are deleted; "
            "write the version again"
        )


def require_committable(backend: Backend, up) -> None:
    """Called inside the commit's transaction: an expired or reclaimed upload is refused,
    so a commit never lists files that a reclaim is deleting. To a commit, an expired
    upload is gone (404), as an unknown one is; a PUT to it is a conflict (409)."""
    _require_open(backend, up, up["id"], expired=NotFound)


def check_open(backend: Backend, upload_id: str) -> None:
    """Refuse a PUT before reading its body when the upload can no longer change."""
    _require_open(backend, store.uploads.state(backend.conn(), upload_id), upload_id)


def store_file(
    backend: Backend,
    bucket: str,
    artifact: str,
    upload_id: str,
    name: str,
    body: Body,
    expected: int | None,
) -> tuple[int, str]:
    """Store one PUT body and make it the file's current bytes; returns (size, sha256).

    `expected` is the Content-Length: a body that ends short (the client hung up) is
    discarded rather than recorded, so it cannot replace a whole one.
    """
    check_open(backend, upload_id)
    # No database connection is held while the body streams: a slow upload (one rank of a
    # hundred) must not keep one of the pool's connections from other requests.
    backend.release()
    key = new_object_key(artifact, upload_id, name)
    backend.storage.put(bucket, key, cast(BinaryIO, body))
    try:
        size, digest = body.size, body.hexdigest()
        if expected is not None and size != expected:
            raise InvalidArgument(
                f"the body of {name} ended after {size} of {expected} bytes; nothing was kept"
            )
        pause("put:stored")
        superseded = _make_current(backend, upload_id, name, key, size, digest)
    except BaseException:
        _delete_unused(backend, bucket, key)
        raise
    if superseded and superseded != key:
        _delete_unused(backend, bucket, superseded)
    return size, digest


def _delete_unused(backend: Backend, bucket: str, key: str) -> None:
    """An object no file points at; with storage down it stays, under its upload's prefix,
    which goes whole when the upload is reclaimed or its version deleted."""
    try:
        backend.storage.delete(bucket, key)
    except StorageUnavailable:
        log.warning("storage unavailable: an unused object stays until its upload goes")


def _make_current(
    backend: Backend, upload_id: str, name: str, key: str, size: int, digest: str
) -> str | None:
    """The one step that makes a stored body visible; returns the key it replaced."""
    conn = backend.conn()
    with store.transaction(conn):
        # Locked (PostgreSQL): a commit or a reclaim of this upload takes its turn after.
        _require_open(backend, store.uploads.state(conn, upload_id, lock=True), upload_id)
        old = store.uploads.current_key(conn, upload_id, name)
        if old is None:
            raise NotFound(f"upload {upload_id} has no file {name!r}")
        store.uploads.mark_received(conn, upload_id, name, key, size, digest)
    return old[0]


def reclaim_expired_uploads(backend: Backend) -> int:
    """Delete uploads never committed within `upload_lifetime`, and deleted versions whose
    last URLs have expired, with their bytes.

    The state change comes first, in one transaction that re-reads the state: an upload a
    commit got to first is skipped, and once marked, no commit or PUT can use it.
    """
    conn = backend.conn()
    if not store.uploads.any_expired(conn, backend.now()):
        return 0  # the common case, without taking the write lock
    with store.transaction(conn):
        rows = store.uploads.mark_expired_reclaimed(conn, backend.now())
    pause("reclaim:marked")
    kept = []
    for row in rows:
        bucket = backend.location(row["location"]).bucket
        try:
            backend.storage.delete_prefix(bucket, upload_prefix(row["artifact"], row["id"]))
        except StorageUnavailable:
            kept.append(row)
    if kept:
        # Whatever call reclaims on its way is not failed for it: its bytes wait, marked
        # as before, for the next reclaim (the reaper's, or a later call's).
        log.warning("storage unavailable: the bytes of %d expired upload(s) wait for the "
                    "next reclaim", len(kept))
        with store.transaction(conn):
            store.uploads.unmark_reclaimed(conn, kept)
    return len(rows) - len(kept)
