"""Forgetting every artifact, version, upload and transfer at once (`/_emulator/reset`);
keys, nodes and the deployment's `meta` facts stay."""

from __future__ import annotations

from sqlalchemy import Connection

from .. import db


def wipe(conn: Connection) -> None:
    """Empty every table of the contract's state, in one transaction."""
    with db.transaction(conn):
        for table in db.TABLES:
            conn.execute(table.delete())


__all__ = ["wipe"]
