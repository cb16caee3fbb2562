"""What every blueprint reads from its request and app: the backend, and the admin key a
request presents (checked once here for both the admin endpoints and the pages)."""

from __future__ import annotations

import base64
import binascii
import hmac
import time

from flask import current_app, g, request

from ..core.errors import Unavailable
from ..state.backend import Backend


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


def apply_chaos(backend: Backend, operation: str) -> None:
    """A chaos rule's effect on this call (`/_emulator/chaos`), for calls whose key or
    signature passed: latency, a failure status, or a cut body."""
    effect = backend.chaos.effect(backend.conn(), operation)
    if effect is None:
        return
    if effect.latency_ms:
        time.sleep(effect.latency_ms / 1000)
    if effect.status:
        raise Unavailable(f"{operation} failed by a chaos rule", effect.status)
    g.cut_after_bytes = effect.cut_after_bytes
