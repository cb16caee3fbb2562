"""o41 Artifacts emulator: the contract's HTTP API over three fake cloud regions."""

from __future__ import annotations

from .app import create_app
from .config import Settings

__all__ = ["EmulatorDidNotStart", "ServedEmulator", "Settings", "create_app", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # ServedEmulator pulls in requests; `serve` never needs it, so it loads on first use.
    if name in ("EmulatorDidNotStart", "ServedEmulator"):
        from . import served

        return getattr(served, name)
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
