"""Signed data-plane URLs (READ-4), signed with itsdangerous rather than by hand.

The URL path names the object; the `sig` query parameter carries a signed payload with the
method, the path, the expiry and what metering needs (artifact, version, reader place). A
payload copied onto another path, a changed signature, or an expired payload is refused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from urllib.parse import quote

from itsdangerous import BadSignature, Signer, URLSafeSerializer
from itsdangerous.encoding import base64_encode

from .errors import Forbidden


class _KeyedSigner(Signer):
    """itsdangerous' signer with its key derived once: the serializer makes a signer per
    call, and each derived the same key again (a quarter of a URL's signing time)."""

    _derived: dict[tuple[bytes, bytes], bytes] = {}

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        secret = self.secret_keys[-1] if secret_key is None else secret_key
        secret = secret.encode() if isinstance(secret, str) else secret
        cache_key = (secret, self.salt)
        key = self._derived.get(cache_key)
        if key is None:
            key = self._derived[cache_key] = super().derive_key(secret_key)
        return key


class _Serializer(URLSafeSerializer):
    """URL-safe payloads, never zlib-compressed: a payload of a few dozen bytes seldom
    shrinks, and trying costs more than the HMAC. Compressed ones (signed before this)
    still load."""

    default_signer = _KeyedSigner

    def dump_payload(self, obj: object) -> bytes:
        return base64_encode(self.serializer.dumps(obj, separators=(",", ":")).encode())


class UrlSigner:
    def __init__(self, secret: str, never_expire: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        self._serializer = _Serializer(secret, salt="o41-data-plane")
        self._never_expire = never_expire  # the url-never-expires fault
        self._clock = clock  # the database's: a URL signed on one node is checked on another

    def sign(
        self, base_url: str, method: str, location_id: str, key: str, expires: float, **meta: object
    ) -> str:
        """A signed URL for one method on one object, valid until `expires` (unix time)."""
        path = f"/data/{location_id}/{key}"
        # The expiry to the millisecond the reply's `urls_expire_at` shows: whole seconds
        # would end a URL up to a second before the time it claims (READ-4).
        payload = {"m": method, "p": path, "e": math.floor(expires * 1000) / 1000, **meta}
        return f"{base_url.rstrip('/')}{quote(path)}?sig={self._serializer.dumps(payload)}"

    def verify(self, method: str, path: str, sig: str | None) -> dict:
        """The signed payload, if `sig` was made for this method and (decoded) path and is live."""
        if not sig:
            raise Forbidden("missing signature")
        try:
            payload = self._serializer.loads(sig)
        except BadSignature:
            raise Forbidden("signature does not match") from None
        allowed = ("GET", "HEAD") if payload.get("m") == "GET" else (payload.get("m"),)
        if payload.get("p") != path or method not in allowed:
            raise Forbidden("signature is for another path or method")
        if payload["e"] < self._clock() and not self._never_expire:
            raise Forbidden("signed URL has expired")
        return payload
