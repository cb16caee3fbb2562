"""The private names of Lightning that o41's adapters reach, each behind one typed function.

Lightning has no public API for these: the connector that resolves ``ckpt_path``, the
function that calls every callback's hooks, and ``AsyncCheckpointIO``'s executor and the
error it raises at the next save. They are named here once, so a Lightning that renames
one fails here (``o41.adapters.lightning`` then refuses such a fit with one line) and no
other module reads a private name across objects.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lightning.pytorch.trainer.connectors.checkpoint_connector import (
        _CheckpointConnector,
    )

CONNECTOR = "_CheckpointConnector"  # in ``trainer.connectors.checkpoint_connector``
CALLBACK_HOOKS = "_call_callback_hooks"  # in ``trainer.call``
ENSURE_SETUP, EXECUTOR, ERROR = "_ensure_setup", "_executor", "_error"  # AsyncCheckpointIO

Hooks = Callable[..., None]


def checkpoint_connector(module: ModuleType) -> type[_CheckpointConnector]:
    """The class whose ``_select_ckpt_path`` resolves a fit's ``ckpt_path``."""
    found: type[_CheckpointConnector] = getattr(module, CONNECTOR)
    return found


def callback_hooks(call: ModuleType) -> Hooks:
    """The function that calls one hook of every callback of a trainer."""
    found: Hooks = getattr(call, CALLBACK_HOOKS)
    return found


def replace_callback_hooks(call: ModuleType, hooks: Hooks) -> None:
    setattr(call, CALLBACK_HOOKS, hooks)


def async_executor(io: object) -> Executor | None:
    """``AsyncCheckpointIO``'s one-thread executor (set up if need be), or None for a
    checkpoint IO that saves on the caller's thread."""
    ensure_setup: Callable[[], None] | None = getattr(io, ENSURE_SETUP, None)
    if ensure_setup is None or not hasattr(io, EXECUTOR):
        return None
    ensure_setup()
    executor: Executor = getattr(io, EXECUTOR)
    return executor


def raise_at_next_save(io: object, exc: BaseException) -> None:
    """Hand ``AsyncCheckpointIO`` an error of its thread: Lightning raises it at the next
    save or at the end of the fit, as it does its own."""
    setattr(io, ERROR, exc)


__all__ = ["async_executor", "callback_hooks", "checkpoint_connector", "raise_at_next_save",
           "replace_callback_hooks"]
