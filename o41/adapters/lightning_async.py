"""Lightning's ``AsyncCheckpointIO`` through ``o41://``: saves on its thread, one version each.

``Trainer(plugins=[AsyncCheckpointIO()])`` hands each ``torch.save`` to a one-thread
executor, so the files of a ``ModelCheckpoint`` save are written after its hook (and o41's
transaction around it, ``o41.adapters.lightning``) has returned, by a thread whose filesystem
instance knows nothing of that transaction. Here the main thread resolves each file to its
version (``o41://P/N/step-…/last.ckpt``: the global step is the main thread's) and learns
any refusal before queueing. The step is the fit's pending one (``o41.adapters.lightning_steps``),
held, so the worker's closes do not commit it; its commit is queued behind the writes on
the same executor. Training goes on while the checkpoint uploads; a failed commit is
raised by Lightning at the next save or at the end of ``fit``, as its own errors are, and a
fenced process stops as any other.
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import TYPE_CHECKING

import fsspec

if TYPE_CHECKING:
    from lightning.pytorch.plugins.io.async_plugin import AsyncCheckpointIO


def mend_async(package: str) -> None:
    """Teach ``package``'s ``AsyncCheckpointIO`` o41 paths (nothing else changes)."""
    try:
        module = importlib.import_module(f"{package}.plugins.io.async_plugin")
    except ImportError:
        return
    cls = module.AsyncCheckpointIO
    save = cls.save_checkpoint

    @functools.wraps(save)
    def save_checkpoint(self: AsyncCheckpointIO, checkpoint: dict[str, object],
                        path: str | os.PathLike[str], *args: object,
                        **kwargs: object) -> None:
        if not str(path).startswith("o41://"):
            return save(self, checkpoint, path, *args, **kwargs)
        fs, _ = fsspec.core.url_to_fs(str(path))
        if not fs.in_transaction:  # a single file: the worker's close commits it, as a sync save
            return save(self, checkpoint, path, *args, **kwargs)
        key, name = fs.write_target(str(path))
        fs.writer.check_new_step(key)  # refused here, before the open, on the caller's thread
        fs.writer.writable(key[0])
        return save(self, checkpoint, f"o41://{key[0]}/{key[1]}/{name}", *args, **kwargs)

    cls.save_checkpoint = save_checkpoint


__all__ = ["mend_async"]
