"""The run's environment: target, keys, places, names, seed and the optional capabilities.

One :class:`Env` per test session, built by the plugin from the command line. Optional
capabilities are detected once, with a reason, so tests that need them skip instead of
failing (as the OCI distribution-spec conformance suite does).

Names are the only thing a run may not repeat (the target keeps what earlier runs wrote),
so artifact and holder names are a run tag plus a per-slug counter: the tag keeps runs
apart, the counter keeps the names of one run the same from run to run. Everything that
decides what is exercised (file contents, hypothesis' choices) derives from ``seed``.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from conformance.client import Client
from conformance.client import Trail
from conformance.model import Topology

__all__ = ["FEATURES", "Env", "ScopedKey"]

#: Feature markers of optional capabilities, with what enables each one.
FEATURES: dict[str, str] = {
    "usage": "the target offers GET /usage/read",
    "read_key": "a read-only key (--read-key KEY; spawn passes one)",
    "scoped_key": "a key with write only under a prefix (--scoped-key KEY=PREFIX; spawn: one)",
    "scoped_read": "a read-only prefix of the scoped key (--scoped-read-prefix PREFIX)",
    "url_expiry": "signed URLs that expire within --max-url-wait seconds",
    "fallback": "a fallback location for clouds without one (--fallback PLACE, not 'none')",
    "size_limit": "a file size limit (up to 1 PiB; one above --max-put-bytes N must be "
                  "refused from the Content-Length; spawn: 8 MiB)",
}

_DEFAULT: Any = object()
_NAME = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ScopedKey:
    """A key whose scope is ``write`` on ``write_prefix`` (and, when given, ``read`` on
    ``read_prefix``) and nothing on the run's own project. The suite creates artifacts under
    the prefixes with the write key and the scoped key, and expects 403 everywhere else."""

    key: str = field(repr=False)  # tracebacks print reprs: a key never shows there
    write_prefix: str
    read_prefix: str | None = None

    @classmethod
    def parse(cls, text: str, read_prefix: str | None = None) -> ScopedKey:
        """``KEY=PREFIX`` as given to ``--scoped-key``."""
        key, sep, prefix = text.partition("=")
        if not (sep and key.strip() and prefix.strip()):
            raise ValueError("--scoped-key wants KEY=PREFIX, got a value without a key, "
                             "an '=' or a prefix")
        return cls(key.strip(), prefix.strip(), (read_prefix or "").strip() or None)

    def prefixes(self) -> tuple[str, ...]:
        """Every prefix the key may read (write implies read)."""
        return tuple(p for p in (self.write_prefix, self.read_prefix) if p)

    def covers(self, name: str) -> bool:
        return name.startswith(self.prefixes())


@dataclass
class Env:
    """Everything a conformance test needs to know about the target."""

    base: str
    #: Keys are left out of the repr: pytest prints a failing frame's arguments with it.
    key: str | None = field(repr=False)
    topology: Topology
    prefix: str
    read_key: str | None = field(default=None, repr=False)
    scoped: ScopedKey | None = None
    spawned: bool = False
    faults: tuple[str, ...] = ()
    max_url_wait: float = 10.0
    #: The largest body the suite sends past the target's file size limit (VER-6.e).
    max_put_bytes: int = 16 << 20
    seed: int = 0
    #: Added to every name when ``prefix`` is not unique to the run (given by ``--prefix``).
    run_tag: str = ""
    has_fallback: bool = True
    _capabilities: dict[str, tuple[bool, str]] = field(default_factory=dict)
    _counts: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.scoped is not None:
            outside = self.artifact("x-probe", count=False)
            if self.scoped.covers(outside):
                raise ValueError(
                    f"the scoped key's prefixes {self.scoped.prefixes()} cover the run's own "
                    f"artifacts ({outside}): pass --prefix outside them"
                )
            name = self.scoped_artifact("probe", count=False)
            if not _NAME.fullmatch(name):
                raise ValueError(f"--scoped-key prefix gives invalid artifact names: {name!r}")

    @property
    def scoped_key(self) -> str | None:
        return self.scoped.key if self.scoped else None

    def client(self, *, key: str | None = _DEFAULT, trail: Trail | None = None) -> Client:
        return Client(self.base, self.key if key is _DEFAULT else key, trail=trail)

    def _next(self, slug: str, count: bool = True) -> int:
        with self._lock:
            if count:
                self._counts[slug] += 1
            return self._counts[slug]

    def artifact(self, slug: str, *, count: bool = True) -> str:
        """A fresh artifact name under this run's project: tests never share artifacts, and
        the n-th name of a slug is the same in every run."""
        tag = f"-{self.run_tag}" if self.run_tag else ""
        return f"{self.prefix}/{slug}-{self._next(slug, count)}{tag}"

    def scoped_artifact(self, slug: str, access: str = "write", *, count: bool = True) -> str:
        """A fresh name under the scoped key's write (or read-only) prefix."""
        if self.scoped is None:
            raise LookupError("no scoped key: pass --scoped-key KEY=PREFIX")
        prefix = self.scoped.write_prefix if access == "write" else self.scoped.read_prefix
        if prefix is None:
            raise LookupError("no read-only prefix: pass --scoped-read-prefix PREFIX")
        sep = "" if "/" in prefix else "/"
        tag = self.run_tag or self.prefix
        return f"{prefix}{sep}{tag}-{slug}-{self._next(f'{access}:{slug}', count)}"

    def holder(self, box: str) -> str:
        """A holder id for a box: distinct per call, the same sequence in every run."""
        return f"{box}-{self._next(f'holder:{box}')}"

    def rng(self, label: str) -> random.Random:
        """A random source for ``label`` derived from the run's seed (replayable)."""
        return random.Random(f"{self.seed}/{label}")

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
            return False, "optional capability: needs a read-only key (pass --read-key KEY)"
        if feature == "scoped_key":
            if self.scoped:
                return True, f"key scoped to {self.scoped.write_prefix!r}"
            return False, "optional capability: needs a scoped key (pass --scoped-key KEY=PREFIX)"
        if feature == "scoped_read":
            if self.scoped and self.scoped.read_prefix:
                return True, f"scoped key reads {self.scoped.read_prefix!r}"
            return False, (
                "optional capability: needs a read-only prefix of the scoped key "
                "(pass --scoped-key KEY=PREFIX and --scoped-read-prefix PREFIX)"
            )
        if feature == "fallback":
            if self.has_fallback:
                return True, f"fallback location {self.topology.fallback}"
            return False, "optional capability: the target has no fallback (--fallback none)"
        if feature == "url_expiry":
            return True, "measured by the expiry test from urls_expire_at"
        if feature == "size_limit":
            return True, "measured by the streamed-limit test from declared sizes"
        raise KeyError(feature)

    def note(self, feature: str, available: bool, reason: str) -> None:
        """Record a capability a test measured itself (e.g. the URL lifetime)."""
        self._capabilities[feature] = (available, reason)

    def capabilities(self) -> dict[str, dict[str, Any]]:
        """What was detected so far, for the JSON report."""
        return {k: {"available": v[0], "reason": v[1]} for k, v in self._capabilities.items()}
