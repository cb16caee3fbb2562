"""The run's environment: target, keys, places, prefix and the optional capabilities.

One :class:`Env` per test session, built by the plugin from the command line. Optional
capabilities are detected once, with a reason, so tests that need them skip instead of
failing (as the OCI distribution-spec conformance suite does).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from conformance.client import Client, Trail
from conformance.model import Topology

__all__ = ["FEATURES", "Env"]

#: Feature markers for optional capabilities, with what each one needs.
FEATURES: dict[str, str] = {
    "usage": "the target offers GET /usage/read",
    "read_key": "a read-only key (--read-key, or --target spawn)",
    "scoped_key": "a key scoped to prefixes of this run (only with --target spawn)",
    "url_expiry": "signed URLs that expire within --max-url-wait seconds",
}

_DEFAULT: Any = object()


@dataclass
class Env:
    """Everything a conformance test needs to know about the target."""

    base: str
    key: str | None
    topology: Topology
    prefix: str
    read_key: str | None = None
    scoped_key: str | None = None
    spawned: bool = False
    faults: tuple[str, ...] = ()
    max_url_wait: float = 10.0
    _capabilities: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def client(self, *, key: str | None = _DEFAULT, trail: Trail | None = None) -> Client:
        return Client(self.base, self.key if key is _DEFAULT else key, trail=trail)

    def artifact(self, slug: str) -> str:
        """A fresh artifact name under this run's project: tests never share artifacts."""
        return f"{self.prefix}/{slug}-{secrets.token_hex(3)}"

    def holder(self, box: str) -> str:
        return f"{box}-{secrets.token_hex(2)}"

    def capability(self, feature: str) -> tuple[bool, str]:
        """Whether an optional capability is there, and why not (detected once)."""
        if feature not in self._capabilities:
            self._capabilities[feature] = self._detect(feature)
        return self._capabilities[feature]

    def _detect(self, feature: str) -> tuple[bool, str]:
        if feature == "usage":
            reply = self.client().usage()
            if reply.ok:
                return True, "GET /usage/read answers"
            return False, f"optional capability: GET /usage/read answered {reply.brief()}"
        if feature == "read_key":
            if self.read_key:
                return True, "read-only key given"
            return False, "optional capability: no read-only key (pass --read-key KEY)"
        if feature == "scoped_key":
            if self.scoped_key:
                return True, "prefix-scoped key configured by --target spawn"
            return False, "optional capability: a prefix-scoped key exists only with spawn"
        if feature == "url_expiry":
            return True, "measured by the expiry test from urls_expire_at"
        raise KeyError(feature)

    def note(self, feature: str, available: bool, reason: str) -> None:
        """Record a capability a test measured itself (e.g. the URL lifetime)."""
        self._capabilities[feature] = (available, reason)

    def capabilities(self) -> dict[str, dict[str, Any]]:
        """What was detected so far, for the JSON report."""
        return {k: {"available": v[0], "reason": v[1]} for k, v in self._capabilities.items()}
