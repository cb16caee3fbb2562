"""API keys as the metadata store holds them (AUTH-1..3): looked up by digest, shared by
every node on one database, so a key stored through one node works on all of them. What a
key may do, and which keys a change may touch, is decided here; the rows are
`store.keys`'s."""

from __future__ import annotations

from ..core.errors import Unauthenticated
from ..core.keys import Principal, digest
from ..store import Connection
from ..store import keys as rows_of


def authenticate(conn: Connection, header: str | None) -> Principal:
    """Resolve an `Authorization: Bearer ak_...` header; anything else is 401."""
    if not header:
        raise Unauthenticated("missing Authorization: Bearer <key> header")
    scheme, _, key = header.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthenticated("Authorization header must be 'Bearer <key>'")
    rows = rows_of.scopes(conn, digest(key))
    if not rows:
        raise Unauthenticated("unknown API key")
    return Principal(tuple((r["prefix"], r["access"]) for r in rows))


def scopes_of(conn: Connection, key: str) -> tuple[tuple[str, str], ...] | None:
    """The scopes an existing key has, or None when no such key exists."""
    rows = rows_of.scopes_of(conn, digest(key))
    return tuple((prefix, access) for prefix, access in rows) or None


def store(conn: Connection, key: str, scopes: tuple[tuple[str, str], ...],
          origin: str = "minted") -> None:
    """Create or replace a key's scopes (call inside a transaction). A prefix listed twice
    keeps its last access, and a node storing the same key at once waits, then skips.
    A config key stays one when its scopes are changed through the endpoint."""
    h = digest(key)
    was = rows_of.origin(conn, h)
    rows_of.drop(conn, h)
    last = dict(scopes)
    origin = "config" if was == "config" else origin
    rows_of.add(conn, [{"key_hash": h, "prefix": p, "access": a, "origin": origin}
                       for p, a in last.items()])


def revoke(conn: Connection, key: str) -> str | None:
    """Remove a minted key (call inside a transaction); its origin, None if unknown. A
    config key stays: the config is its truth."""
    h = digest(key)
    origin = rows_of.origin(conn, h)
    if origin == "minted":
        rows_of.drop(conn, h)
    return origin
