"""What the client tests build on the emulator of ``client_fixtures``: an ``o41://``
filesystem (``make_fs``) and deterministic bytes (``blob``).

A module of its own, not ``client_fixtures``: that one is a plugin (``pytest_plugins``), and
a test module that imported it before pytest registers it would keep its asserts unrewritten.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

import fsspec

if TYPE_CHECKING:
    from o41.fs.filesystem import O41FileSystem
    from tests.support.client_fixtures import Emulator


def make_fs(emu: Emulator, prefix: str | None = "test-box", **options: object) -> O41FileSystem:
    """A fresh ``o41://`` filesystem on ``emu`` in aws/us-east-1 (never fsspec's cached
    instance). Its holder is ``PREFIX-<random>``, a launch of its own (one process holds one
    open per holder), unless ``options`` names one; ``prefix=None`` leaves the holder to the
    client's default. A file whose tests want other defaults binds them with a partial."""
    if prefix is not None:
        options.setdefault("holder", f"{prefix}-{secrets.token_hex(3)}")
    return fsspec.filesystem("o41", api_url=emu.api, api_key=emu.key, place="aws/us-east-1",
                             skip_instance_cache=True, **options)


def blob(size: int, seed: int = 1) -> bytes:
    """``size`` bytes that look random, the same for the same ``seed``."""
    return hashlib.shake_256(seed.to_bytes(4, "big")).digest(size)
