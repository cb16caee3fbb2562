"""One version per global step of a Lightning fit, whichever callbacks and hooks save in it.

Lightning saves one global step more than once: two ``ModelCheckpoint`` callbacks on one
``dirpath`` (a ``monitor="val_loss"`` best and a periodic one), or one that saves at a
batch's end and again at validation's end. On s3 these are files beside each other; here a
version is immutable once committed, so a version per save call would keep the first save
of the step and lose the rest. So every save of a fit's global step goes into ONE pending
version: the step is held (``fs.writer.hold_step``: no close or transaction commits it), and it is
committed when the next training batch starts (every save of the step is made by then: at
its batch's end, its epoch's end, its validation's end), when the trainer saves at a later
step, and at the end of ``fit`` (its teardown, also after an exception: what was saved
whole is kept). A process killed in between loses only that step, which was never
visible. With ``AsyncCheckpointIO`` the commit is queued
behind the step's writes on Lightning's saving thread.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from o41.adapters.lightning_internals import async_executor, raise_at_next_save
from o41.errors import NotAfterLatest, O41Error, VersionExists
from o41.location import version_name
from o41.paths import parse
from o41.writing.retain import drop_replaced
from o41.writing.stage import StepKey

if TYPE_CHECKING:
    from lightning.pytorch import Trainer
    from lightning.pytorch.callbacks import ModelCheckpoint

    from o41.fs.filesystem import O41FileSystem

log = logging.getLogger("o41")

_PENDING = "_o41_pending"  # trainer attribute: {(id(fs), artifact): (fs, key)}
_DONE = "_o41_torn_down"  # trainer attribute: this fit's teardown ran


def targets(trainer: Trainer, checkpoint_cls: type[ModelCheckpoint],
            o41: Callable[[object], O41FileSystem | None]) -> list[tuple[O41FileSystem, str]]:
    """The o41 filesystems and artifacts of a fitting trainer's checkpoint callbacks."""
    if not getattr(trainer, "is_global_zero", True):
        return []  # one launch, one writer: Lightning saves on global rank 0 only
    state = trainer.state
    if (str(getattr(state.fn, "value", "")) != "fit" or trainer.__dict__.get(_DONE)
            or str(getattr(state.status, "value", "")) != "running"):
        return []  # outside a fit, or after its teardown (a save in on_fit_end): no pending
    found: dict[tuple[int, str], tuple[O41FileSystem, str]] = {}
    for cb in trainer.checkpoint_callbacks:
        fs = o41(cb) if isinstance(cb, checkpoint_cls) else None
        if fs is not None:
            artifact = parse(fs.strip(cb.dirpath)).artifact
            found[(id(fs), artifact)] = (fs, artifact)
    return list(found.values())


def enter(trainer: Trainer, fs: O41FileSystem, artifact: str, step: int) -> StepKey:
    """Make ``step`` the pending version of ``artifact``: an older pending one commits."""
    pending: dict = trainer.__dict__.setdefault(_PENDING, {})
    key = (artifact, version_name(step))
    held = pending.get((id(fs), artifact))
    if held is not None and held[1] != key:
        flush(trainer, fs, artifact)
        held = None
    if held is None:
        fs.writer.hold_step(key)
        pending[(id(fs), artifact)] = (fs, key)
    return key


def saving(trainer: Trainer, found: list[tuple[O41FileSystem, str]], step: int) -> ExitStack:
    """A block whose saves at the artifacts' top go into the pending version of ``step``."""
    stack = ExitStack()
    for fs, artifact in found:
        key = enter(trainer, fs, artifact, step)
        trans = stack.enter_context(fs.transaction)
        if trans.root_step is None:
            trans.root_step = step
        trans.deferred.setdefault(key, functools.partial(_block_ended, trainer, fs, key))
    return stack


def _block_ended(trainer: Trainer, fs: O41FileSystem, key: StepKey, ok: bool) -> None:
    """A block that failed drops the pending step: it may hold half a save."""
    if ok:
        return
    pending: dict = trainer.__dict__.get(_PENDING, {})
    if pending.pop((id(fs), key[0]), None) is not None:
        fs.discard_step(key)
        fs.writer.release_step(key)


def begin(trainer: Trainer) -> None:
    """A fit starts (again): its saves have pending versions until its teardown."""
    trainer.__dict__[_DONE] = False


def flush(trainer: Trainer, fs: O41FileSystem | None = None, artifact: str | None = None) -> None:
    """Commit the pending version of ``artifact`` (or every pending one of the trainer)."""
    pending: dict = trainer.__dict__.get(_PENDING, {})
    chosen = [k for k in pending if fs is None or k == (id(fs), artifact)]
    keep = kept(trainer) if chosen else set()
    for k in chosen:
        owner, key = pending.pop(k)
        io = getattr(trainer.strategy, "checkpoint_io", None)
        executor = async_executor(io)
        if executor is None:
            _commit(owner, key, keep)
            continue
        # AsyncCheckpointIO: after the step's writes, on its thread
        executor.submit(_commit_queued, io, owner, key, keep)


def kept(trainer: Trainer) -> set[str]:
    """The paths the trainer's checkpoint callbacks still name: their top-k, best and last."""
    paths: set[str] = set()
    for cb in getattr(trainer, "checkpoint_callbacks", []):
        paths.update(str(p) for p in (getattr(cb, "best_k_models", None) or {}))
        for name in ("best_model_path", "kth_best_model_path", "last_model_path"):
            if value := getattr(cb, name, None):
                paths.add(str(value))
    return {p for p in paths if p.startswith("o41://")}


def _commit_queued(io: object, fs: O41FileSystem, key: StepKey, keep: set[str]) -> None:
    try:
        _commit(fs, key, keep)
    except BaseException as exc:  # Lightning raises it at the next save or at teardown
        raise_at_next_save(io, exc)


def _commit(fs: O41FileSystem, key: StepKey, keep: set[str]) -> None:
    """Commit the step; then the versions whose files its commit replaced by name go, as
    Lightning's ``last.ckpt`` written over the previous one does on s3 (``o41.writing.retain``)."""
    try:
        committed = fs.commit_step(key, held=True)
    except (VersionExists, NotAfterLatest) as exc:
        if fs.writer.held_latest(key[0]) != key[1]:
            raise
        log.info("o41: o41://%s/%s is committed already (%s); this fit's save at the same "
                 "step is not a new version", key[0], key[1], exc.code)
        return
    finally:
        fs.writer.release_step(key)
    if committed is not None:
        drop_replaced(fs, key[0], keep)


def teardown(trainer: Trainer) -> None:
    """The end of a fit commits its pending versions; after an exception, a failure to do
    so is logged rather than hiding the exception that ended the fit."""
    inflight = sys.exc_info()[1]
    trainer.__dict__[_DONE] = True
    try:
        flush(trainer)
    except O41Error as exc:
        if inflight is None:
            raise
        log.error("o41: the pending checkpoint of this fit was not committed: %s", exc)


__all__ = ["begin", "enter", "flush", "kept", "saving", "targets", "teardown"]
