"""API keys as rows of the metadata store (AUTH-1..3): looked up by digest, shared by every
node on one database, so a key stored through one node works on all of them."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from . import db
from . import hotsql as hot
from .errors import Unauthenticated
from .keys import Principal, digest

_SCOPES = (select(db.api_keys.c.prefix, db.api_keys.c.access)
           .where(db.api_keys.c.key_hash == bindparam("h"))
           .order_by(db.api_keys.c.prefix, db.api_keys.c.access))
_ORIGIN = select(db.api_keys.c.origin).where(db.api_keys.c.key_hash == bindparam("h")).limit(1)


def authenticate(conn: Connection, header: str | None) -> Principal:
    """Resolve an `Authorization: Bearer ak_...` header; anything else is 401."""
    if not header:
        raise Unauthenticated("missing Authorization: Bearer <key> header")
    scheme, _, key = header.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthenticated("Authorization header must be 'Bearer <key>'")
    rows = hot.rows(conn, _SCOPES, {"h": digest(key)})
    if not rows:
        raise Unauthenticated("unknown API key")
    return Principal(tuple((r["prefix"], r["access"]) for r in rows))


def scopes_of(conn: Connection, key: str) -> tuple[tuple[str, str], ...] | None:
    """The scopes an existing key has, or None when no such key exists."""
    rows = conn.execute(_SCOPES, {"h": digest(key)}).all()
    return tuple((prefix, access) for prefix, access in rows) or None


def store(conn: Connection, key: str, scopes: tuple[tuple[str, str], ...],
          origin: str = "minted") -> None:
    """Create or replace a key's scopes (call inside a transaction). A prefix listed twice
    keeps its last access, and a node storing the same key at once waits, then skips.
    A config key stays one when its scopes are changed through the endpoint."""
    h = digest(key)
    was = conn.execute(_ORIGIN, {"h": h}).scalar()
    conn.execute(db.api_keys.delete().where(db.api_keys.c.key_hash == h))
    last = dict(scopes)
    origin = "config" if was == "config" else origin
    db.insert_ignore(conn, db.api_keys, [{"key_hash": h, "prefix": p, "access": a,
                                          "origin": origin} for p, a in last.items()])


def revoke(conn: Connection, key: str) -> str | None:
    """Remove a minted key (call inside a transaction); its origin, None if unknown. A
    config key stays: the config is its truth."""
    h = digest(key)
    origin = conn.execute(_ORIGIN, {"h": h}).scalar()
    if origin == "minted":
        conn.execute(db.api_keys.delete().where(db.api_keys.c.key_hash == h))
    return origin


