"""The `meta` table's facts of one deployment: the data plane's signing secret (made by
`db.initialise`) and the storage identity (`emulator.rules.identity` says what it means)."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from .. import db

M = db.meta
_VALUE = select(M.c.value).where(M.c.name == bindparam("name"))
_STORAGE_ID = "storage_id"


def secret(conn: Connection) -> str:
    """The data plane's signing secret, shared by every node."""
    return conn.execute(_VALUE, {"name": "secret"}).scalar_one()


def storage_identity(conn: Connection) -> str | None:
    """The storage identity the database recorded; None before a node recorded one."""
    return conn.execute(_VALUE, {"name": _STORAGE_ID}).scalar()


def record_storage_identity(conn: Connection, identity: str) -> None:
    """Record the identity unless one is recorded already."""
    db.insert_ignore(conn, M, [{"name": _STORAGE_ID, "value": identity}])


__all__ = ["record_storage_identity", "secret", "storage_identity"]
