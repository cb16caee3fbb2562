"""Which processes are one job, and so one launch of an artifact.

A process belongs to the job of:
- the process it was forked from, or that started it through ``multiprocessing`` (a fork
  ``Pool``, DataLoader workers, ``torch.multiprocessing.spawn`` ranks, DCP's checkpoint
  process): the same program, so the same job, before or after the first open;
- its parent, when both were started with ``O41_MODE=write``: the mode was set for the job
  (torchrun's ranks, a trainer started by ``bash -c``, an evaluation watcher the trainer
  starts before its first ``o41://`` touch);
- the launch ``o41 run`` handed down in ``O41_RUN`` (``o41.job.handoff``), at any depth.

Any other process (an evaluation subprocess of a plain trainer) is a job of its own, and
joins an ancestor's launch of an artifact when that ancestor's job holds one
(``ancestor_jobs``). Two launches started side by side by one harness are two jobs: each
fences the other, as two boxes would.
"""

from __future__ import annotations

import os

from o41.job import hooks, tree

ENV_MODE = "O41_MODE"

_root: dict[int, int] = {}  # this pid -> its job's root pid (a fork asks anew)


def _carries_write_mode(pid: int) -> bool:
    env = tree.start_environment(pid)
    return env is not None and env.get(ENV_MODE, "").strip().lower() == "write"


def root() -> int:
    """The pid of the process this job began in."""
    me = os.getpid()
    found = _root.get(me)
    if found is not None:
        return found
    pid = hooks.forked_from() or tree.multiprocessing_parent() or me
    write = os.environ.get(ENV_MODE, "").strip().lower() == "write"
    for _ in range(tree.MAX_DEPTH):
        parent = tree.parent_of(pid)
        if parent is None or parent <= 1:
            break
        mine = tree.program(pid)
        if mine is not None and tree.program(parent) == mine:
            pid = parent  # forked before the client loaded: the same program
        elif write and _carries_write_mode(parent) and _carries_write_mode(pid):
            pid = parent
        else:
            break
    _root[me] = pid
    return pid


def job() -> str:
    """This process's job, named by its root's pid and start time."""
    return tree.identity(root())


def is_root() -> bool:
    return root() == os.getpid()


def ancestor_jobs() -> list[str]:
    """The jobs of the processes above this job's root, nearest first: an evaluation
    subprocess's trainer, and what started it."""
    return [tree.identity(pid) for pid in tree.ancestors(root())]


hooks.in_forked_child(_root.clear)

__all__ = ["ancestor_jobs", "is_root", "job", "root"]
