"""o41 Artifacts emulator: the contract's HTTP API over three fake cloud regions."""

from __future__ import annotations

from .app import create_app
from .config import Settings
from .served import EmulatorDidNotStart, ServedEmulator

__all__ = ["EmulatorDidNotStart", "ServedEmulator", "Settings", "create_app", "__version__"]
__version__ = "0.1.0"
