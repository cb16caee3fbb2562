"""The nodes serving one database and their key settings' fingerprints, and the lock that
lets one node's start-up decision go at a time (`emulator.state.nodes` decides when they
disagree; `emulator.rules.identity` which storage is the database's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select, text

from .. import db

N = db.nodes
Row = Mapping[str, Any]
_OTHERS = select(N.c.node_id, N.c["keys"], N.c.summary, N.c.seen_at).where(
    N.c.node_id != bindparam("me"), N.c.seen_at > bindparam("since"))
_BEAT = N.update().where(N.c.node_id == bindparam("me")).values(seen_at=bindparam("now"))
_FORGET = N.delete().where(N.c.node_id == bindparam("me"))
_START_LOCK = text("SELECT pg_advisory_xact_lock(4142)")  # 4141 is the schema's (db.setup)


def serialise_starts(conn: Connection) -> None:
    """Inside a transaction: one node's start-up decision at a time (SQLite's write lock is
    held already; PostgreSQL takes an advisory lock until the transaction ends)."""
    if conn.dialect.name == "postgresql":
        conn.execute(_START_LOCK)


def others_seen_since(conn: Connection, me: str, since: float) -> Sequence[Row]:
    """Every other node heard from after `since`, with its keys' fingerprint and summary."""
    return conn.execute(_OTHERS, {"me": me, "since": since}).mappings().all()


def record(conn: Connection, me: str, keys: str, summary: str, now: float) -> None:
    """Record this node (or replace its record) as seen now with these key settings."""
    db.put(conn, N, {"node_id": me, "keys": keys, "summary": summary, "seen_at": now})


def beat(conn: Connection, me: str, now: float) -> None:
    conn.execute(_BEAT, {"me": me, "now": now})


def forget(conn: Connection, me: str) -> None:
    conn.execute(_FORGET, {"me": me})


__all__ = ["beat", "forget", "others_seen_since", "record", "serialise_starts"]
