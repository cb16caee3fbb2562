"""Uploads: files declared and received before a commit, and the upload's state.

States: `open` (receiving), `committed` (a version points at its objects), `deleted` (its
version was deleted; its bytes wait for the URLs given out to expire) and `reclaimed` (its
bytes are gone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select

from .. import db

U, UF = db.uploads, db.upload_files
Row = Mapping[str, Any]
_BY_ID = U.c.id == bindparam("id")
_OF = (_BY_ID, U.c.artifact == bindparam("artifact"))
_STATE = select(U.c.state, U.c.expires_at).where(_BY_ID)
_STATE_LOCKED = _STATE.with_for_update()
_UPLOAD_LOCKED = select(U).where(*_OF).with_for_update()
_LOCATION = select(U.c.location).where(*_OF)
_FILES = select(UF).where(UF.c.upload_id == bindparam("id")).order_by(UF.c.name)
_NAMES = select(UF.c.name).where(UF.c.upload_id == bindparam("id"))
_KEYS = select(UF.c.object_key).where(UF.c.upload_id == bindparam("id"))
_KEY = select(UF.c.object_key).where(UF.c.upload_id == bindparam("id"),
                                     UF.c.name == bindparam("name"))
_RECEIVED = (UF.update().where(UF.c.upload_id == bindparam("id"), UF.c.name == bindparam("file"))
             .values(object_key=bindparam("key"), received_size=bindparam("got_size"),
                     received_sha256=bindparam("sha")))
# Updates bind `upload` (`id` is taken by the column in an UPDATE's SET).
_BY_UPLOAD = U.c.id == bindparam("upload")
_SET_STATE = U.update().where(_BY_UPLOAD).values(state=bindparam("new_state"))
_DELETED = U.update().where(_BY_UPLOAD).values(state="deleted", expires_at=bindparam("until"))
_EVERY = select(U.c.id, U.c.artifact, U.c.location)
# Expired: an open upload never committed in time, or a deleted version's upload once the
# URLs given out before its delete have expired (VER-7); either's bytes can go.
_EXPIRED = (select(U.c.id, U.c.artifact, U.c.location, U.c.state)
            .where(U.c.state.in_(("open", "deleted")), U.c.expires_at < bindparam("now")))
_ANY_EXPIRED = _EXPIRED.limit(1)
# Locked in one order (PostgreSQL), and re-checked once locked: an upload that a commit got
# to first is no longer open, and is skipped.
_EXPIRED_LOCKED = _EXPIRED.order_by(U.c.id).with_for_update()


def state(conn: Connection, upload_id: str, *, lock: bool = False) -> Row | None:
    """`state` and `expires_at`; locked, a commit or a reclaim of it waits its turn."""
    return conn.execute(_STATE_LOCKED if lock else _STATE, {"id": upload_id}).mappings().first()


def lock(conn: Connection, upload_id: str, artifact: str) -> Row | None:
    """The upload of this artifact, locked until the transaction ends (PostgreSQL)."""
    return conn.execute(_UPLOAD_LOCKED, {"id": upload_id, "artifact": artifact}
                        ).mappings().first()


def location_of(conn: Connection, upload_id: str, artifact: str) -> str | None:
    return conn.execute(_LOCATION, {"id": upload_id, "artifact": artifact}).scalar()


def start(conn: Connection, upload: Mapping[str, Any]) -> None:
    conn.execute(U.insert(), dict(upload))


def declare(conn: Connection, upload_id: str, files: Sequence[tuple[str, int, str]]) -> None:
    """Add (name, size, sha256) files to an upload; a streamed one has size -1."""
    if files:
        conn.execute(UF.insert(), [{"upload_id": upload_id, "name": n, "size": s,
                                    "sha256": h} for n, s, h in files])


def files(conn: Connection, upload_id: str) -> Sequence[Row]:
    return conn.execute(_FILES, {"id": upload_id}).mappings().all()


def names(conn: Connection, upload_id: str) -> Sequence[str]:
    return conn.execute(_NAMES, {"id": upload_id}).scalars().all()


def received_keys(conn: Connection, upload_id: str) -> list[str]:
    return [k for k in conn.execute(_KEYS, {"id": upload_id}).scalars() if k]


def current_key(conn: Connection, upload_id: str, name: str) -> tuple[str | None] | None:
    """(object key,) of a declared file (None before its first PUT); None if undeclared."""
    found = conn.execute(_KEY, {"id": upload_id, "name": name}).first()
    return None if found is None else (found[0],)


def mark_received(conn: Connection, upload_id: str, name: str, key: str, size: int,
                  sha256: str) -> None:
    conn.execute(_RECEIVED, {"id": upload_id, "file": name, "key": key, "got_size": size,
                             "sha": sha256})


def mark_committed(conn: Connection, upload_id: str) -> None:
    conn.execute(_SET_STATE, {"upload": upload_id, "new_state": "committed"})


def mark_deleted(conn: Connection, upload_id: str, bytes_until: float) -> None:
    conn.execute(_DELETED, {"upload": upload_id, "until": bytes_until})


def every(conn: Connection) -> Sequence[Row]:
    """(id, artifact, location) of every upload in any state."""
    return conn.execute(_EVERY).mappings().all()


def any_expired(conn: Connection, now: float) -> bool:
    return conn.execute(_ANY_EXPIRED, {"now": now}).first() is not None


def mark_expired_reclaimed(conn: Connection, now: float) -> Sequence[Row]:
    """Inside a transaction: mark every expired upload reclaimed and forget its files;
    returns (id, artifact, location, state before) of each, whose bytes the caller then
    deletes."""
    rows = conn.execute(_EXPIRED_LOCKED, {"now": now}).mappings().all()
    ids = [row["id"] for row in rows]
    if ids:
        dialect = conn.dialect.name
        listed = {"ids": db.members(dialect, ids)}
        conn.execute(U.update().where(db.member_of(dialect, U.c.id, "ids"))
                     .values(state="reclaimed"), listed)
        conn.execute(UF.delete().where(db.member_of(dialect, UF.c.upload_id, "ids")), listed)
    return rows


def unmark_reclaimed(conn: Connection, rows: Sequence[Row]) -> None:
    """Uploads whose bytes could not be deleted (storage was down) go back to the state
    they had, still expired: no PUT or commit can use them, and the next reclaim retries."""
    for row in rows:
        conn.execute(_SET_STATE, {"upload": row["id"], "new_state": row["state"]})
