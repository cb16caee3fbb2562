"""The engines: how a connection to SQLite or PostgreSQL is made and bounded, how a write
transaction begins, whose clock counts, and which of its errors mean "unreachable"."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, PendingRollbackError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import NullPool

POOL_SIZE = 8  # PostgreSQL connections each process keeps open between requests
MAX_OVERFLOW = 24  # and at most this many more while requests beyond them are in progress


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def is_postgresql(url: str) -> bool:
    return url.startswith(("postgresql:", "postgresql+", "postgres:"))


def engine_for(url: str, lock_timeout: float = 5.0) -> Engine:
    """An engine whose connections autocommit: `transaction` opens each transaction
    explicitly, so a read never holds a snapshot (or a lock) past its statement.

    Under PostgreSQL every wait is bounded: a lock wait by `lock_timeout`, a statement by
    six times it, a session left idle inside a transaction (its node frozen) by twice it,
    and a dead peer is noticed by TCP keepalives within about 10 s. Each ends in an
    OperationalError, which the web layer answers 503 with Retry-After."""
    if is_postgresql(url):
        if url.startswith(("postgresql:", "postgres:")):
            url = "postgresql+psycopg:" + url.split(":", 1)[1]
        ms = max(1, int(lock_timeout * 1000))
        parsed = make_url(url)
        # The URL's own libpq `options` (a search_path, say) come first, then the bounds.
        options = " ".join(filter(None, [
            parsed.query.get("options"), f"-c lock_timeout={ms}",
            f"-c statement_timeout={6 * ms}",
            f"-c idle_in_transaction_session_timeout={2 * ms}"]))
        url = parsed.difference_update_query(["options"])
        # A request holds a connection only while it runs, and never while a body streams
        # (`Backend.release`); the pool keeps a few open per process, and at most
        # MAX_OVERFLOW more for requests in progress beyond them, so N nodes need at most
        # N x (POOL_SIZE + MAX_OVERFLOW) of the server's connections.
        return create_engine(
            url, isolation_level="AUTOCOMMIT", pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW,
            pool_timeout=lock_timeout, pool_pre_ping=True, skip_autocommit_rollback=True,
            connect_args={"options": options, "connect_timeout": 5, "keepalives": 1,
                          "keepalives_idle": 5, "keepalives_interval": 2,
                          "keepalives_count": 3})
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool,
                           connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA busy_timeout = 30000")
        # NORMAL is durable across a killed process in WAL mode; only an OS crash loses the tail.
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    return engine


_BEGIN = {"sqlite": "BEGIN IMMEDIATE", "postgresql": "BEGIN"}


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """One write transaction: under SQLite it holds the database's write lock from its
    first statement; under PostgreSQL the rules lock the rows they decide on."""
    conn.exec_driver_sql(_BEGIN[conn.dialect.name])
    try:
        yield conn
    except BaseException:
        try:
            conn.exec_driver_sql("ROLLBACK")
        except DBAPIError:
            pass  # SQLite rolled back already (e.g. on I/O errors), or the connection is gone
        raise
    else:
        conn.exec_driver_sql("COMMIT")


# A read of many statements sees one committed state: SQLite's deferred BEGIN takes its WAL
# snapshot at the first read; PostgreSQL's READ COMMITTED would give each statement its own.
_SNAPSHOT = {"sqlite": "BEGIN", "postgresql": "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}


@contextmanager
def snapshot(conn: Connection) -> Iterator[Connection]:
    """One read transaction: every statement in it sees the database as it was at the first
    (a version and its files, never a version a delete emptied in between). It takes no
    lock, so writers go on beside it; it writes nothing, so it always ends in a rollback."""
    conn.exec_driver_sql(_SNAPSHOT[conn.dialect.name])
    try:
        yield conn
    finally:
        try:
            conn.exec_driver_sql("ROLLBACK")
        except DBAPIError:
            pass  # the connection is gone; the error that ended the read is what counts


def now(conn: Connection) -> float:
    """Unix seconds by the database's clock, the one clock every node shares (expiry is
    compared across nodes); SQLite's is this machine's, read without a query."""
    if conn.dialect.name == "postgresql":
        return conn.exec_driver_sql("SELECT extract(epoch from clock_timestamp())::float8"
                                    ).scalar_one()
    return time.time()


def shown_url(url: str) -> str:
    """The database's URL as a log line may show it: never with its password."""
    return make_url(url).render_as_string(hide_password=True)


#: Every error the database or its driver raises, as SQLAlchemy wraps it.
DatabaseError = DBAPIError


def unreachable(exc: BaseException) -> bool:
    """An error of reaching or waiting on the database (a restart, a lost connection, a lock
    wait cut by `lock_timeout`, a busy pool): nothing was decided, so the call may repeat.
    Any other error, a statement's own bug among them, is not one."""
    transient = isinstance(exc, (PendingRollbackError, PoolTimeout, OperationalError,
                                 InterfaceError))
    return transient or (isinstance(exc, DBAPIError) and exc.connection_invalidated)
