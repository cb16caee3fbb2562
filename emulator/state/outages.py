"""Faults of the metadata database and of region storage as the contract's callers see
them: 503, not 500.

A database restart, a lost connection, a lock wait cut by `db_lock_timeout` (a frozen node
holds the row) and a busy pool all end a call before anything was decided, so it is safe to
repeat: the reply says so with 503 `unavailable` and `Retry-After`. So do an S3 server
that is down, slow or answering 5xx (`StorageUnavailable`): a PUT it cut stored nothing the
upload counts, and a commit that could not see its files committed nothing.
"""

from __future__ import annotations

from .. import store
from ..core.errors import Unavailable
from ..storage import StorageUnavailable


def as_unavailable(exc: BaseException) -> Unavailable | None:
    """The 503 for an error of reaching or waiting on the database or storage; None for
    any other error (a statement's own bug stays a 500)."""
    if isinstance(exc, StorageUnavailable):
        err = Unavailable("region storage is unavailable for a moment; nothing was "
                          "acknowledged that is not stored, try again")
    elif store.unreachable(exc):
        err = Unavailable("the metadata database is unavailable for a moment; nothing was "
                          "changed, try again")
    else:
        return None
    err.headers["Retry-After"] = "1"
    return err
