"""Artifacts and the tokens of their opens: epochs, holders, version counts, forks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, bindparam, select

from .. import db

A, T = db.artifacts, db.tokens
Row = Mapping[str, Any]
_ARTIFACT = select(A).where(A.c.name == bindparam("name"))
_LOCKED = _ARTIFACT.with_for_update()
_HELD = _ARTIFACT.with_for_update(read=True)
_EXISTS = select(A.c.name).where(A.c.name == bindparam("name"))
# Updates bind `artifact` and `new_*` (a column's own name is taken in an UPDATE's SET).
_BY_ARTIFACT = A.c.name == bindparam("artifact")
_REOPEN = A.update().where(_BY_ARTIFACT).values(epoch=bindparam("new_epoch"),
                                                holder=bindparam("new_holder"))
_FORKED = A.update().where(_BY_ARTIFACT).values(forked_from_artifact=bindparam("source"),
                                                forked_from_version=bindparam("source_version"))
_COUNT = A.update().where(_BY_ARTIFACT).values(versions=A.c.versions + bindparam("delta"))
_TOKEN = select(T).where(T.c.token == bindparam("token"))


def lock(conn: Connection, name: str) -> Row | None:
    """The artifact's row, locked until the transaction ends (PostgreSQL; SQLite's write
    lock is held already): opens, commits and deletes of one artifact take turns on it, so
    each decides on the epoch and the versions the last one left."""
    return conn.execute(_LOCKED, {"name": name}).mappings().first()


def hold(conn: Connection, name: str) -> None:
    """A share lock on the artifact's row until the transaction ends (PostgreSQL): a fork
    reads its source version whole while a delete or a commit of the source waits, and
    other forks of it go on beside."""
    conn.execute(_HELD, {"name": name})


def read(conn: Connection, name: str) -> Row | None:
    return conn.execute(_ARTIFACT, {"name": name}).mappings().first()


def exists(conn: Connection, name: str) -> bool:
    return conn.execute(_EXISTS, {"name": name}).first() is not None


def create(conn: Connection, name: str, holder: str, created_at: str) -> bool:
    """The first open's row at epoch 1; False when another node's first open came first."""
    return db.insert_ignore(conn, A, [{"name": name, "epoch": 1, "holder": holder,
                                       "versions": 0, "created_at": created_at}]) == 1


def reopen(conn: Connection, name: str, epoch: int, holder: str) -> None:
    conn.execute(_REOPEN, {"artifact": name, "new_epoch": epoch, "new_holder": holder})


def record_fork(conn: Connection, name: str, source: str, version: str) -> None:
    conn.execute(_FORKED, {"artifact": name, "source": source, "source_version": version})


def count_versions(conn: Connection, name: str, delta: int) -> None:
    conn.execute(_COUNT, {"artifact": name, "delta": delta})


def issue_token(conn: Connection, token: str, artifact: str, epoch: int, holder: str,
                place: str, created_at: str) -> None:
    conn.execute(T.insert(), {"token": token, "artifact": artifact, "epoch": epoch,
                              "holder": holder, "place": place, "created_at": created_at})


def token(conn: Connection, token: str) -> Row | None:
    return conn.execute(_TOKEN, {"token": token}).mappings().first()
