"""The registry of legal variants, apart from the variants, so both variant modules can
register into it without importing each other."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Mutant

__all__ = ["LEGAL", "legal", "walk"]

LEGAL: dict[str, type[Mutant]] = {}

def legal(cls: type[Mutant]) -> type[Mutant]:
    """Register a legal variant under its ``name`` (class decorator)."""
    if not cls.name or not cls.summary:
        raise ValueError(f"{cls.__qualname__} needs name and summary")
    if cls.name in LEGAL:
        raise ValueError(f"two legal variants named {cls.name!r}")
    LEGAL[cls.name] = cls
    return cls


def walk(value: Any, fn: Any, key: str | None = None) -> Any:
    """``value`` rebuilt bottom-up, ``fn(key, node)`` applied to every node."""
    if isinstance(value, dict):
        value = {k: walk(v, fn, k) for k, v in value.items()}
    elif isinstance(value, list):
        value = [walk(v, fn, key) for v in value]
    return fn(key, value)
