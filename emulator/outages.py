"""Faults of the metadata database as the contract's callers see them: 503, not 500.

A database restart, a lost connection, a lock wait cut by `db_lock_timeout` (a frozen node
holds the row) and a busy pool all end a call before anything was decided, so it is safe to
repeat: the reply says so with 503 `unavailable` and `Retry-After`.
"""

from __future__ import annotations

from . import store
from .errors import Unavailable


def as_unavailable(exc: BaseException) -> Unavailable | None:
    """The 503 for an error of reaching or waiting on the database; None for any other
    error (a statement's own bug stays a 500)."""
    if not store.unreachable(exc):
        return None
    err = Unavailable("the metadata database is unavailable for a moment; nothing was "
                      "changed, try again")
    err.headers["Retry-After"] = "1"
    return err
