"""Forgetting every artifact, version, upload and transfer at once (`/_emulator/reset`);
keys, nodes and the deployment's `meta` facts stay."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from .. import db

_UPLOADS = select(func.count()).select_from(db.uploads)


def wipe(conn: Connection) -> int:
    """Empty every table of the contract's state, in one transaction; returns how many
    uploads it forgot."""
    with db.transaction(conn):
        forgotten = conn.execute(_UPLOADS).scalar_one()
        for table in db.TABLES:
            conn.execute(table.delete())
    return forgotten


__all__ = ["wipe"]
