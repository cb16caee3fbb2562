"""API keys and their scopes (AUTH-1..3).

Keys are stored as SHA-256 digests and looked up by digest, so the comparison never touches
the secret byte by byte and the database never holds a key in the clear. This module loads
no database (the settings read scopes with it before any is loaded): `keystore` looks keys
up, through `store.keys`.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from .errors import Forbidden, InvalidArgument

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


def new_key() -> str:
    return "ak_" + secrets.token_urlsafe(24)
