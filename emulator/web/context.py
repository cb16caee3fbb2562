"""What every blueprint reads from its request and app: the backend, and the admin key a
request presents (checked once here for both the admin endpoints and the pages)."""

from __future__ import annotations

import base64
import binascii
import hmac

from flask import current_app, request

from ..backend import Backend


def backend() -> Backend:
    return current_app.extensions["o41"]


def presented_admin_key() -> str:
    """The key of `Authorization`: a Bearer token, or a Basic password (what browsers send)."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value, validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return ""
    return value if scheme.lower() == "bearer" else ""


def is_admin_key(given: str) -> bool:
    """True when no admin key is set, or `given` is it (compared in constant time)."""
    admin_key = backend().settings.admin_key
    if not admin_key:
        return True
    return bool(given) and hmac.compare_digest(given.encode(), admin_key.encode())
