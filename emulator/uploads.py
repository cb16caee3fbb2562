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

import secrets
from typing import BinaryIO, Protocol, cast

from sqlalchemy import bindparam, select

from . import db
from .backend import Backend
from .errors import ApiError, Incomplete, InvalidArgument, NotFound, VersionExists

U, UF = db.uploads, db.upload_files
_STATE = select(U.c.state, U.c.expires_at).where(U.c.id == bindparam("id"))
_OBJECT_KEY = select(UF.c.object_key).where(UF.c.upload_id == bindparam("id"),
                                           UF.c.name == bindparam("name"))
_RECEIVED = (UF.update().where(UF.c.upload_id == bindparam("id"), UF.c.name == bindparam("file"))
             .values(object_key=bindparam("key"), received_size=bindparam("got_size"),
                     received_sha256=bindparam("sha")))
_EVERY_UPLOAD = select(U.c.id, U.c.artifact, U.c.location)
# Expired: an open upload never committed in time, or a deleted version's upload once the
# URLs given out before its delete have expired (VER-7); either's bytes can go.
_EXPIRED = (select(U.c.id, U.c.artifact, U.c.location)
            .where(U.c.state.in_(("open", "deleted")), U.c.expires_at < bindparam("now")))
_ANY_EXPIRED = _EXPIRED.limit(1)
# Locked in one order (PostgreSQL), and re-checked once locked: an upload that a commit got
# to first is no longer open, and is skipped.
_EXPIRED_LOCKED = _EXPIRED.order_by(U.c.id).with_for_update()
_STATE_LOCKED = _STATE.with_for_update()


def pause(point: str) -> None:
    """A named point where a test may hold one request to force an interleaving
    (tests monkeypatch `emulator.uploads.pause`); in service it does nothing.

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
    rows = backend.conn().execute(_EVERY_UPLOAD).mappings().all()
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
    row = backend.conn().execute(_STATE, {"id": upload_id}).mappings().first()
    _require_open(backend, row, upload_id)


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
        backend.storage.delete(bucket, key)
        raise
    if superseded and superseded != key:
        backend.storage.delete(bucket, superseded)
    return size, digest


def _make_current(
    backend: Backend, upload_id: str, name: str, key: str, size: int, digest: str
) -> str | None:
    """The one step that makes a stored body visible; returns the key it replaced."""
    conn = backend.conn()
    with db.transaction(conn):
        # Locked (PostgreSQL): a commit or a reclaim of this upload takes its turn after.
        row = conn.execute(_STATE_LOCKED, {"id": upload_id}).mappings().first()
        _require_open(backend, row, upload_id)
        old = conn.execute(_OBJECT_KEY, {"id": upload_id, "name": name}).first()
        if old is None:
            raise NotFound(f"upload {upload_id} has no file {name!r}")
        conn.execute(_RECEIVED, {"id": upload_id, "file": name, "key": key, "got_size": size,
                                 "sha": digest})
    return old[0]


def reclaim_expired_uploads(backend: Backend) -> int:
    """Delete uploads never committed within `upload_lifetime`, and deleted versions whose
    last URLs have expired, with their bytes.

    The state change comes first, in one transaction that re-reads the state: an upload a
    commit got to first is skipped, and once marked, no commit or PUT can use it.
    """
    conn = backend.conn()
    if not conn.execute(_ANY_EXPIRED, {"now": backend.now()}).first():
        return 0  # the common case, without taking the write lock
    with db.transaction(conn):
        rows = conn.execute(_EXPIRED_LOCKED, {"now": backend.now()}).mappings().all()
        ids = [row["id"] for row in rows]
        if ids:
            dialect = conn.dialect.name
            listed = {"ids": db.members(dialect, ids)}
            conn.execute(U.update().where(db.member_of(dialect, U.c.id, "ids"))
                         .values(state="reclaimed"), listed)
            conn.execute(UF.delete().where(db.member_of(dialect, UF.c.upload_id, "ids")), listed)
    pause("reclaim:marked")
    for row in rows:
        bucket = backend.location(row["location"]).bucket
        backend.storage.delete_prefix(bucket, upload_prefix(row["artifact"], row["id"]))
    return len(rows)

