"""The chaos rules as the one JSON row every worker and node reads (`emulator.state.chaos`
decides when a rule fires)."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from .. import db
from ..db import hotsql as hot

M = db.meta
_RULES = select(M.c.value).where(M.c.name == "chaos")
_LOCKED = _RULES.with_for_update()
_REWRITE = M.update().where(M.c.name == "chaos").values(value=bindparam("raw"))


def rules(conn: Connection) -> str | None:
    """The rules' JSON, on every call's hot path (emulator.db.hotsql); None if never set."""
    found = hot.first(conn, _RULES, {})
    return (found or {}).get("value")


def put(conn: Connection, raw: str) -> None:
    """Set the rules' JSON, whether or not any were set before."""
    db.put(conn, M, {"name": "chaos", "value": raw})


def locked(conn: Connection) -> str | None:
    """The rules' JSON, locked until the transaction ends: two nodes spending a counted
    rule's last firing at once must not both fire."""
    return conn.execute(_LOCKED).scalar()


def rewrite(conn: Connection, raw: str) -> None:
    """Replace the rules' JSON (after `locked`, in its transaction)."""
    conn.execute(_REWRITE, {"raw": raw})


__all__ = ["locked", "put", "rewrite", "rules"]
