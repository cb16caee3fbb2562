"""Text from a target, shown safely; the run's keys, shown never.

The suite is run against servers its user does not fully trust, and its output is pasted
into pull requests. So everything a target sent (error codes, messages, headers) is shown
with control characters, escape sequences and lone surrogates spelled out (``\\x1b``,
``\\udcff``): a terminal never obeys them and every report encodes. And every key the run
was given is replaced by ``***`` wherever it would be shown: the recorded command line,
failure messages, tracebacks (pytest prints a frame's arguments and, with ``-l``, its
locals), captured output, the JSON, HTML and JUnit reports.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from typing import Any

__all__ = ["MASK", "SECRET_OPTIONS", "Secrets", "mask_argv", "safe", "scrub"]

MASK = "***"

#: Options whose value is a key (``--scoped-key`` is ``KEY=PREFIX``: the prefix is shown).
SECRET_OPTIONS = ("--api-key", "--read-key", "--scoped-key", "--expiry-api-key")

# C0 and C1 controls but newline and tab, DEL, lone surrogates, and the bidirectional
# overrides and isolates that make a terminal show text in another order than it is.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe(text: str) -> str:
    """``text`` with every character a terminal would act on spelled out, repr-style."""
    return _UNSAFE.sub(_spelled, text)


#: Keys shorter than this are not masked: masking "a" would blank every message.
_SHORTEST = 4
#: Keys at least this long are masked also one character off (one changed, dropped or
#: cut off) and in any case: a test that sends such a near copy to see it refused would
#: otherwise show all of the key but one character.
_NEAR = 8


def _near_copies(key: str) -> set[str]:
    """Regex alternatives matching ``key`` and its copies one character off."""
    if len(key) < _NEAR:
        return {re.escape(key)}
    found = {re.escape(key)}
    for i in range(len(key)):
        found.add(re.escape(key[:i]) + "." + re.escape(key[i + 1:]))  # one changed
        found.add(re.escape(key[:i] + key[i + 1:]))  # one dropped (or cut off at the end)
    return found


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


class Secrets:
    """The keys of one run (thread-safe: keys known only once the target is up are added)."""

    def __init__(self, values: list[str | None] | None = None) -> None:
        self._lock = threading.Lock()
        self._values: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        #: Lower-case pieces every copy of a key contains (its halves), with its length.
        self._anchors: list[tuple[str, int]] = []
        for v in values or []:
            self.add(v)

    def add(self, value: str | None) -> None:
        if not value or len(value) < _SHORTEST:
            return
        with self._lock:
            if value in self._values:
                return
            self._values.append(value)
            pieces = set().union(*(_near_copies(v) for v in self._values))
            # Longest first: the whole key wins over a copy of it one character short.
            alternatives = "|".join(sorted(pieces, key=len, reverse=True))
            self._pattern = re.compile(alternatives, re.IGNORECASE | re.DOTALL)
            low, half = value.lower(), len(value) // 2
            halves = [low[:half], low[half:]] if len(value) >= _NEAR else [low]
            self._anchors += [(h, len(value)) for h in halves]

    def mask(self, text: str) -> str:
        """``text`` with every key, and every copy of one a character off, as ``***``.

        One changed or dropped character leaves one half of the key whole, so the (slow)
        pattern runs only around where a half occurs: plain ``str.find`` finds those."""
        pattern = self._pattern
        if pattern is None:
            return text
        low = text.lower()
        if len(low) != len(text):  # a character whose lower case is longer: no shortcut
            return pattern.sub(MASK, text)
        spans: list[tuple[int, int]] = []
        for anchor, width in self._anchors:
            at = low.find(anchor)
            while at != -1:
                spans.append((max(0, at - width), at + len(anchor) + width))
                at = low.find(anchor, at + 1)
        if not spans:
            return text
        out, last = [], 0
        for start, end in _merged(spans):
            out += [text[last:start], pattern.sub(MASK, text[start:end])]
            last = end
        return "".join([*out, text[last:]])

    def shown(self, text: str) -> str:
        """``text`` masked and made safe: the form every output of the suite uses."""
        return safe(self.mask(text))

    def __bool__(self) -> bool:
        return bool(self._values)

    def __repr__(self) -> str:
        return f"Secrets({len(self._values)} keys)"


def mask_argv(argv: list[str]) -> list[str]:
    """A command line with the value of every key option masked (``--api-key X`` and
    ``--api-key=X``; of ``--scoped-key KEY=PREFIX`` only the key)."""

    def masked(option: str, value: str) -> str:
        if option == "--scoped-key" and "=" in value:
            return MASK + "=" + value.split("=", 1)[1]
        return MASK

    out: list[str] = []
    pending: str | None = None
    for arg in argv:
        if pending is not None:
            out.append(masked(pending, arg))
            pending = None
            continue
        name, eq, value = arg.partition("=")
        if name in SECRET_OPTIONS and eq:
            out.append(f"{name}={masked(name, value)}")
        else:
            out.append(arg)
            pending = arg if arg in SECRET_OPTIONS else None
    return out


def scrub(value: Any, clean: Any) -> Any:
    """Every string inside ``value`` (dicts, lists, tuples, dataclasses such as pytest's
    traceback reprs) passed through ``clean``; dataclasses are changed in place."""
    return _scrub(value, clean, set())


def _scrub(value: Any, clean: Any, seen: set[int]) -> Any:
    if isinstance(value, str):
        return clean(value)
    if id(value) in seen:
        return value
    if isinstance(value, dict):
        seen.add(id(value))
        return {_scrub(k, clean, seen): _scrub(v, clean, seen) for k, v in value.items()}
    if isinstance(value, list):
        seen.add(id(value))
        return [_scrub(v, clean, seen) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub(v, clean, seen) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        seen.add(id(value))
        for f in dataclasses.fields(value):
            old = getattr(value, f.name, None)
            new = _scrub(old, clean, seen)
            if new is not old:
                object.__setattr__(value, f.name, new)
    return value
