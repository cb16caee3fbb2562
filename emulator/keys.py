"""API keys and their scopes (AUTH-1..3).

Keys are stored as SHA-256 digests and looked up by digest, so the comparison never touches
the secret byte by byte and the database never holds a key in the clear.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from dataclasses import dataclass

from .errors import Forbidden, InvalidArgument, Unauthenticated

ACCESS = ("read", "write")


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """What one key may do: artifact prefixes with read or write (write implies read)."""

    scopes: tuple[tuple[str, str], ...]

    def can(self, access: str, artifact: str) -> bool:
        return any(
            artifact.startswith(prefix) and (access == "read" or granted == "write")
            for prefix, granted in self.scopes
        )

    def require(self, access: str, artifact: str) -> None:
        if not self.can(access, artifact):
            raise Forbidden(f"this key has no {access} access to {artifact}")

    def json(self) -> list[dict]:
        return [{"prefix": p, "access": a} for p, a in self.scopes]


ANYONE = Principal((("", "write"),))


def authenticate(conn: sqlite3.Connection, header: str | None) -> Principal:
    """Resolve an `Authorization: Bearer ak_...` header; anything else is 401."""
    if not header:
        raise Unauthenticated("missing Authorization: Bearer <key> header")
    scheme, _, key = header.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthenticated("Authorization header must be 'Bearer <key>'")
    rows = conn.execute(
        "SELECT prefix, access FROM api_keys WHERE key_hash = ?", (digest(key),)
    ).fetchall()
    if not rows:
        raise Unauthenticated("unknown API key")
    return Principal(tuple((r["prefix"], r["access"]) for r in rows))


def parse_scopes(raw: object) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return (("", "write"),)
    if not isinstance(raw, list) or not raw:
        raise InvalidArgument("scopes must be a non-empty list of {prefix, access}")
    out = []
    for item in raw:
        if not isinstance(item, dict):
            raise InvalidArgument("each scope is {prefix, access}")
        prefix, access = item.get("prefix", ""), item.get("access", "read")
        if not isinstance(prefix, str) or access not in ACCESS:
            raise InvalidArgument("scope prefix must be a string and access read or write")
        out.append((prefix, access))
    return tuple(out)


def scopes_of(conn: sqlite3.Connection, key: str) -> tuple[tuple[str, str], ...] | None:
    """The scopes an existing key has, or None when no such key exists."""
    rows = conn.execute(
        "SELECT prefix, access FROM api_keys WHERE key_hash = ? ORDER BY prefix, access",
        (digest(key),),
    ).fetchall()
    return tuple((r["prefix"], r["access"]) for r in rows) or None


def store(conn: sqlite3.Connection, key: str, scopes: tuple[tuple[str, str], ...]) -> None:
    """Create or replace a key's scopes (call inside a transaction)."""
    h = digest(key)
    conn.execute("DELETE FROM api_keys WHERE key_hash = ?", (h,))
    conn.executemany(
        "INSERT OR REPLACE INTO api_keys (key_hash, prefix, access) VALUES (?, ?, ?)",
        [(h, p, a) for p, a in scopes],
    )


def new_key() -> str:
    return "ak_" + secrets.token_urlsafe(24)
