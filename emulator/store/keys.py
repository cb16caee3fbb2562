"""API keys as rows, by the digest of the key (`emulator.state.keystore` decides what a key may
do and which origin it keeps): shared by every node on one database."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select

from .. import db
from ..db import hotsql as hot

K = db.api_keys
_SCOPES = (select(K.c.prefix, K.c.access)
           .where(K.c.key_hash == bindparam("h"))
           .order_by(K.c.prefix, K.c.access))
_ORIGIN = select(K.c.origin).where(K.c.key_hash == bindparam("h")).limit(1)
_DROP = K.delete().where(K.c.key_hash == bindparam("h"))
_CONFIG_KEYS = K.delete().where(K.c.origin == "config")


def scopes(conn: Connection, key_hash: str) -> list[dict[str, Any]]:
    """The (prefix, access) rows of a key, on every call's hot path (emulator.db.hotsql)."""
    return hot.rows(conn, _SCOPES, {"h": key_hash})


def scopes_of(conn: Connection, key_hash: str) -> Sequence[Any]:
    """The (prefix, access) rows of a key, as SQLAlchemy rows: off the hot path."""
    return conn.execute(_SCOPES, {"h": key_hash}).all()


def origin(conn: Connection, key_hash: str) -> str | None:
    """Where a key came from ("config" or "minted"); None when it is unknown."""
    return conn.execute(_ORIGIN, {"h": key_hash}).scalar()


def drop(conn: Connection, key_hash: str) -> None:
    """Remove every scope of a key."""
    conn.execute(_DROP, {"h": key_hash})


def add(conn: Connection, rows: Sequence[Mapping[str, str]]) -> None:
    """Insert scope rows whose key is new; a node inserting the same at once waits, then
    skips (`ON CONFLICT DO NOTHING`)."""
    db.insert_ignore(conn, K, [dict(r) for r in rows])


def drop_config_keys(conn: Connection) -> None:
    """Remove every key stored from a node's settings (a start stores its config's anew)."""
    conn.execute(_CONFIG_KEYS)


__all__ = ["add", "drop", "drop_config_keys", "origin", "scopes", "scopes_of"]
