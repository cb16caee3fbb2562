"""Frameworks taught o41's checkpoints once loaded: a table of adapters found by name, so
the adapters depend on the filesystem and never the other way (``o41.adapters``)."""

from __future__ import annotations

import importlib
import sys

# a framework's module, once loaded -> the adapter's function that teaches it o41's layout
ADAPTERS = {
    "lightning.pytorch": "o41.adapters.lightning:mend",
    "pytorch_lightning": "o41.adapters.lightning:mend",
    "torch.distributed.checkpoint._fsspec_filesystem": "o41.adapters.dcp:mend",
}
_mended: set[str] = set()


def mend_loaded() -> None:
    """Teach each loaded framework o41's checkpoints (``ADAPTERS``), once each; a no-op
    without them. Called at every ``url_to_fs`` of an ``o41://`` URL too, so the order of
    imports and of fsspec's instance cache does not matter."""
    loaded = {m for m in ADAPTERS if m in sys.modules} - _mended
    for framework in sorted(loaded):
        module, _, function = ADAPTERS[framework].partition(":")
        getattr(importlib.import_module(module), function)()
    _mended.update(loaded)


__all__ = ["ADAPTERS", "mend_loaded"]
