"""Every process hook of the client, installed here and nowhere else: fork, exit, SIGTERM.

A job is a tree of processes, and the client's state crosses its edges at three moments: a
fork (the child is the same launch; what the parent closed must be committed first, so that
a forked reader sees it), an exit (steps whose files are all closed commit, and what never
will is named), and SIGTERM (the notice a spot box gets: commit, then do what the signal did
before). Other modules register what they need to happen; the order of registration is the
order of the calls, and one failing callback does not stop the others.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from o41.job import tree

log = logging.getLogger("o41")

Callback = Callable[[], None]

_before_fork: list[Callback] = []
_in_child: list[Callback] = []
_at_exit: list[Callback] = []
_on_sigterm: list[Callback] = []
_forked_from: list[int] = []  # pids this process was forked from after o41 loaded
_sigterm: dict[str, signal.Handlers | Callable[[int, FrameType | None], object] | int | None] = {}


def before_fork(fn: Callback) -> Callback:
    """Run ``fn`` in the parent just before it forks."""
    _before_fork.append(fn)
    return fn


def in_forked_child(fn: Callback) -> Callback:
    """Run ``fn`` in a forked child before it goes on (fresh locks, its own threads)."""
    _in_child.append(fn)
    return fn


def at_exit(fn: Callback) -> Callback:
    """Run ``fn`` when the process ends: normally, on an uncaught exception, and in a
    ``multiprocessing`` child that ends with ``os._exit`` (through its finalizers)."""
    _at_exit.append(fn)
    return fn


def on_sigterm(fn: Callback) -> Callback:
    """Run ``fn`` on SIGTERM (once ``catch_sigterm`` installed the handler), before the
    handler the process had."""
    _on_sigterm.append(fn)
    return fn


def forked_from() -> int | None:
    """The pid this process was forked from, when that happened with the client loaded."""
    return _forked_from[-1] if _forked_from else None


def _run(callbacks: list[Callback], when: str) -> None:
    for fn in list(callbacks):
        try:
            fn()
        except Exception as exc:  # a hook must not break the fork, exit or signal it rides on
            log.warning("o41: %s: %s", when, exc)


_pid_before_fork = [os.getpid()]


def _parent_before_fork() -> None:
    _pid_before_fork[0] = os.getpid()
    _run(_before_fork, "before fork")


def _child_after_fork() -> None:
    _forked_from.append(_pid_before_fork[0])
    _release_sigterm()
    _run(_in_child, "after fork")
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:  # a multiprocessing worker ends with os._exit: no atexit there
        mp_util.Finalize(None, _exiting, exitpriority=10)


def _exiting() -> None:
    _run(_at_exit, "at exit")


os.register_at_fork(before=_parent_before_fork, after_in_child=_child_after_fork)
atexit.register(_exiting)


def catch_sigterm() -> None:
    """On SIGTERM, run the registered callbacks, then what SIGTERM did before (by default,
    end the process with it). Python lets only the main thread install a handler; from
    another thread this does nothing (and the exit hooks still commit at a normal exit).

    Nor in a ``multiprocessing`` child (a ``Pool``'s worker, DCP's checkpoint process, a
    spawned rank): its parent ends it with SIGTERM (``terminate()``, and at exit for a
    daemon child) and then joins it. A Python handler runs only when the main thread next
    runs Python code; when the signal lands on another thread (the fence watch), or just
    before the main thread blocks in a lock of the pool's queue, the handler never runs,
    the child outlives its SIGTERM, and the parent's join hangs for good. SIGTERM's own
    action ends the process whichever thread takes it."""
    if (_sigterm or threading.current_thread() is not threading.main_thread()
            or tree.multiprocessing_parent() is not None):
        return
    try:
        _sigterm["previous"] = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _sigterm_received)
    except (ValueError, OSError):
        _sigterm.clear()


def _release_sigterm() -> None:
    """In a forked child: SIGTERM does again what it did before the client caught it (the
    child catches it anew when it has steps to commit, unless ``catch_sigterm`` says no)."""
    if not _sigterm:
        return
    previous = _sigterm.pop("previous", None)
    _sigterm.clear()
    try:  # None: a handler not set from Python, which this client's replaced for good
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    except (ValueError, OSError) as exc:
        log.warning("o41: after fork: SIGTERM left to the client's handler: %s", exc)


def _sigterm_received(signum: int, frame: FrameType | None) -> None:
    _run(_on_sigterm, "on SIGTERM")
    previous = _sigterm.get("previous")
    if callable(previous):
        previous(signum, frame)
        return
    if previous == signal.SIG_IGN:
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def forward_signals(to: Callable[[int], None]) -> None:
    """``o41 run``: SIGINT and SIGTERM go to the command it runs."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _frame: to(number))


__all__ = ["at_exit", "before_fork", "catch_sigterm", "forked_from", "forward_signals",
           "in_forked_child", "on_sigterm"]
