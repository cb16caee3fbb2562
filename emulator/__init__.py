"""o41 Artifacts emulator: the contract's HTTP API over three fake cloud regions.

Every public name loads on first use: ``emulator.served`` (which the replay harness and test
suites import) and the CLI must not pay for Flask, and the app must not pay for requests.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .app import create_app
    from .config import Settings
    from .served import EmulatorDidNotStart, ServedEmulator
    from .threaded import ThreadedEmulator

__all__ = ["EmulatorDidNotStart", "ServedEmulator", "Settings", "ThreadedEmulator", "create_app",
           "__version__"]
__version__ = "0.1.0"

_HOMES = {
    "create_app": ".app",
    "Settings": ".config",
    "EmulatorDidNotStart": ".served",
    "ServedEmulator": ".served",
    "ThreadedEmulator": ".threaded",
}


def __getattr__(name: str) -> object:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
