"""The process tree, as ``/proc`` tells it: who a process's parent is, when it started, what
it runs and the environment it was started with.

A job is a tree of processes (a trainer, its forked DataLoader workers and background saves,
``torch.multiprocessing.spawn`` ranks, a checkpoint process, an evaluation subprocess), and
the client must tell which of them are one launch. Only Linux's ``/proc`` says so after the
fact; elsewhere every answer is "unknown" and each process is a job of its own.
"""

from __future__ import annotations

import os
import sys

MAX_DEPTH = 64  # ancestors walked at most: deeper trees are not jobs anyone launches by hand


def _read(pid: int, what: str) -> bytes | None:
    try:
        with open(f"/proc/{pid}/{what}", "rb") as f:
            return f.read()
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold spaces and parentheses)."""
    raw = _read(pid, "stat")
    if raw is None:
        return None
    return raw.rpartition(b")")[2].decode("ascii", "replace").split()


def parent_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    try:
        return int(fields[1]) if fields else None
    except (IndexError, ValueError):
        return None


def started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot: with the pid, a name no later
    process has (pids are reused, start times of one pid are not)."""
    fields = _stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else None


def identity(pid: int) -> str:
    """``PID-STARTTIME``, or ``PID`` where ``/proc`` is missing."""
    start = started(pid)
    return f"{pid}-{start}" if start else str(pid)


def alive(name: str) -> bool:
    """Whether the process an ``identity`` names still runs."""
    pid_text, _, start = name.partition("-")
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if start:
        return started(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def program(pid: int) -> bytes | None:
    """What the process runs: its command line (a fork keeps its parent's)."""
    return _read(pid, "cmdline")


def start_environment(pid: int) -> dict[str, str] | None:
    """The environment the process was started with (not what it set since)."""
    raw = _read(pid, "environ")
    if raw is None:
        return None
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def ancestors(pid: int) -> list[int]:
    """Parents of ``pid``, nearest first, up to (not including) pid 1."""
    found: list[int] = []
    current = pid
    while len(found) < MAX_DEPTH:
        parent = parent_of(current)
        if parent is None or parent <= 1 or parent in found:
            break
        found.append(parent)
        current = parent
    return found


def multiprocessing_parent() -> int | None:
    """The pid of the process that started this one through ``multiprocessing`` (spawn,
    forkserver or fork: ``torch.multiprocessing.spawn`` ranks, a ``Pool``'s workers, DCP's
    checkpoint process), without importing ``multiprocessing`` into a process that has not."""
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return None
    parent = process.parent_process()
    return parent.pid if parent is not None else None


__all__ = ["MAX_DEPTH", "alive", "ancestors", "identity", "multiprocessing_parent",
           "parent_of", "program", "start_environment", "started"]
