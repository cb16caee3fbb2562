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
#: Any run of this many characters of a key is masked too: a test that sends a key one
#: character off (or cut short) would otherwise show all of it but one character.
_WINDOW = 8


class Secrets:
    """The keys of one run (thread-safe: tests may add one they were handed late)."""

    def __init__(self, values: list[str | None] | None = None) -> None:
        self._lock = threading.Lock()
        self._values: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        for v in values or []:
            self.add(v)

    def add(self, value: str | None) -> None:
        if not value or len(value) < _SHORTEST:
            return
        with self._lock:
            if value in self._values:
                return
            self._values.append(value)
            pieces = {v[i:i + _WINDOW] for v in self._values
                      for i in range(max(1, len(v) - _WINDOW + 1))}
            # Longest first, so a short key inside a longer one's window is found whole.
            alternatives = "|".join(re.escape(p) for p in sorted(pieces, key=len, reverse=True))
            self._pattern = re.compile(f"(?=({alternatives}))")

    def mask(self, text: str) -> str:
        """``text`` with every key, and every run of 8 characters of one, as ``***``."""
        pattern = self._pattern
        if pattern is None:
            return text
        spans: list[list[int]] = []
        for m in pattern.finditer(text):
            start, end = m.start(), m.start() + len(m.group(1))
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], MASK]
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
