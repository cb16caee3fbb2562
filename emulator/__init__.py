"""o41 Artifacts emulator: the contract's HTTP API over three fake cloud regions.

Every public name loads on first use: ``emulator.run.served`` (which the replay harness and test
suites import) and the CLI must not pay for Flask, and the app must not pay for requests.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run.served import EmulatorDidNotStart, ServedEmulator
    from .run.threaded import ThreadedEmulator
    from .settings.config import Settings
    from .web.app import create_app

__all__ = ["EmulatorDidNotStart", "ServedEmulator", "Settings", "ThreadedEmulator", "create_app",
           "__version__"]
__version__ = "0.1.0"

_HOMES = {
    "create_app": ".web.app",
    "Settings": ".settings.config",
    "EmulatorDidNotStart": ".run.served",
    "ServedEmulator": ".run.served",
    "ThreadedEmulator": ".run.threaded",
}


def __getattr__(name: str) -> object:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
