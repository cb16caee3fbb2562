"""Lightning's ``AsyncCheckpointIO`` through ``o41://``: saves on its thread, one version each.

``Trainer(plugins=[AsyncCheckpointIO()])`` hands each ``torch.save`` to a one-thread
executor, so the files of a ``ModelCheckpoint`` save are written after its hook (and o41's
transaction around it, ``o41.lightning``) has returned, by a thread whose filesystem
instance knows nothing of that transaction. Here the main thread resolves each file to its
version (``o41://P/N/step-…/last.ckpt``: the global step is the main thread's) and learns
any refusal before queueing; the step is held, so the worker's closes do not commit it;
and the transaction's end queues the commit (or the discard, when the hook failed) behind
the writes on the same executor. Training goes on while the checkpoint uploads; a failed
commit is raised by Lightning at the next save or at the end of ``fit``, as its own
errors are, and a fenced process stops as any other.
"""

from __future__ import annotations

import functools
import importlib
import logging
from typing import Any

import fsspec

from .errors import NotAfterLatest, VersionExists
from .fsguard import check_new_step
from .fsstage import StepKey

log = logging.getLogger("o41")


def mend_async(package: str) -> None:
    """Teach ``package``'s ``AsyncCheckpointIO`` o41 paths (nothing else changes)."""
    try:
        module = importlib.import_module(f"{package}.plugins.io.async_plugin")
    except ImportError:
        return
    cls = module.AsyncCheckpointIO
    save = cls.save_checkpoint

    @functools.wraps(save)
    def save_checkpoint(self: Any, checkpoint: Any, path: Any, *args: Any, **kwargs: Any
                        ) -> Any:
        if not str(path).startswith("o41://"):
            return save(self, checkpoint, path, *args, **kwargs)
        fs, _ = fsspec.core.url_to_fs(str(path))
        if not fs._intrans:  # a single file: the worker's close commits it, as a sync save
            return save(self, checkpoint, path, *args, **kwargs)
        key, name = fs._write_target(str(path))
        fs._writable(key[0])
        check_new_step(fs, key)  # refused here, on the caller's thread, not in the queue
        trans = fs.transaction
        if key not in trans.deferred:
            fs._staging.hold(key)
            trans.steps.add(key)
            trans.deferred[key] = functools.partial(_queue_end, self, fs, key)
        return save(self, checkpoint, f"o41://{key[0]}/{key[1]}/{name}", *args, **kwargs)

    cls.save_checkpoint = save_checkpoint


def _queue_end(io: Any, fs: Any, key: StepKey, commit: bool) -> None:
    """Queue the step's commit (or discard) behind its writes on ``io``'s executor."""

    def end() -> None:
        try:
            if not commit:
                fs._staging.discard(key)
                return
            try:
                fs._commit_step(key, held=True)
            except (VersionExists, NotAfterLatest):
                if fs._latest.get(key[0]) != key[1]:
                    raise
                log.info("o41: o41://%s/%s was saved already by this run; this save at the "
                         "same step is not a new version", *key)
        except BaseException as exc:  # Lightning raises it at the next save or teardown
            io._error = exc
        finally:
            fs._staging.release(key)

    io._ensure_setup()
    io._executor.submit(end)


__all__ = ["mend_async"]
