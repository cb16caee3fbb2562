"""The metadata store: one schema in SQLAlchemy Core, two engines (SQLite and PostgreSQL).

Rules write their SQL once, in Core, against the tables below; the few places where the
dialects differ (taking the write lock, upserts, JSON built by the database, a long
`IN` list, the database's clock) are functions here, so no rule module names a dialect.

SQLite (the default, a file in the data dir): WAL lets readers proceed beside one writer,
and `BEGIN IMMEDIATE` takes the write lock at the start of an open or a commit, so fencing
is decided by one serialised transaction even across worker processes.

PostgreSQL (the `database` setting): many emulator processes share one database. A
transaction there is READ COMMITTED, so every read-modify-write locks the rows it decides
on (`SELECT ... FOR UPDATE`, which SQLite's compiler leaves out: its write lock is already
held) and a first insert that may race another uses `ON CONFLICT`.
"""

from __future__ import annotations

import functools
import importlib
import json
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Float,
    Index,
    MetaData,
    Table,
    Text,
    any_,
    bindparam,
    create_engine,
    event,
    func,
    inspect,
    literal_column,
    make_url,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.pool import NullPool
from sqlalchemy.sql.expression import ColumnElement, FunctionElement, Join

metadata = MetaData()


# Text compares by code point under both engines: SQLite's BINARY, PostgreSQL's "C"
# (whatever the server's locale), so every ORDER BY lists names in one order.
_TEXT = Text().with_variant(Text(collation="C"), "postgresql")


def _text(name: str, *, key: bool = False, null: bool = False, default: str | None = None
          ) -> Column:
    return Column(name, _TEXT, primary_key=key, nullable=null, server_default=default)


def _int(name: str, *, key: bool = False, null: bool = False, default: str | None = None
         ) -> Column:
    # BIGINT: sizes and byte counts pass 2**31; SQLite stores every integer in 64 bits anyway.
    return Column(name, BigInteger, primary_key=key, nullable=null, server_default=default,
                  autoincrement=False)


meta = Table("meta", metadata, _text("name", key=True), _text("value"))
artifacts = Table(
    "artifacts", metadata,
    _text("name", key=True),
    _int("epoch"),
    _text("holder", null=True),
    _int("versions", default="0"),
    _text("forked_from_artifact", null=True),
    _text("forked_from_version", null=True),
    _text("created_at"),
)
tokens = Table(
    "tokens", metadata,
    _text("token", key=True),
    _text("artifact"),
    _int("epoch"),
    _text("holder"),
    _text("place", default=""),
    _text("created_at"),
)
uploads = Table(
    "uploads", metadata,
    _text("id", key=True),
    _text("artifact"),
    _text("token"),
    _int("epoch"),
    _text("holder"),
    _text("version"),
    _int("step"),
    _text("location"),
    _text("place", default=""),
    _text("placement"),
    _text("state", default="open"),
    _text("created_at"),
    Column("expires_at", Float, nullable=False),
    Index("uploads_by_state", "state", "expires_at"),
)
upload_files = Table(
    "upload_files", metadata,
    _text("upload_id", key=True),
    _text("name", key=True),
    _int("size"),
    _text("sha256"),
    _int("received_size", null=True),
    _text("received_sha256", null=True),
    _text("object_key", null=True),
)
versions = Table(
    "versions", metadata,
    _text("artifact", key=True),
    _int("step", key=True),
    _text("version"),
    _text("location"),
    _int("size"),
    _text("created_at"),
    _int("epoch"),
    _text("holder"),
    _text("place", default=""),
    _text("placement"),
    _text("upload_id"),
)
version_files = Table(
    "version_files", metadata,
    _text("artifact", key=True),
    _int("step", key=True),
    _text("name", key=True),
    _int("size"),
    _text("sha256"),
    _text("object_key", null=True),
)
transfers = Table(
    "transfers", metadata,
    _text("direction", key=True),
    _text("artifact", key=True),
    _text("version", key=True),
    _text("location", key=True),
    _text("place", key=True),
    _text("route", key=True),
    _int("bytes"),
    # The usage report reads transfers by artifact in (artifact, version, direction) order:
    # covering that order means no sort and no table lookups, even over 100,000 rows.
    Index("transfers_report", "artifact", "version", "direction", "location", "place",
          "route", "bytes"),
)
api_keys = Table(
    "api_keys", metadata,
    _text("key_hash", key=True),
    _text("prefix", key=True),
    _text("access"),
    # "config": stored from a node's settings, replaced at each start (the config is the
    # truth for them); "minted": added through /_emulator/keys, kept until revoked there.
    _text("origin", default="config"),
)
# The nodes serving one database, each with the fingerprint of its key settings: a node
# whose keys differ from a live one's refuses to start (emulator.nodes).
nodes = Table(
    "nodes", metadata,
    _text("node_id", key=True),
    _text("keys"),
    _text("summary"),
    Column("seen_at", Float, nullable=False),
)

TABLES = (artifacts, tokens, uploads, upload_files, versions, version_files, transfers)


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


def initialise(engine: Engine) -> None:
    """Create the schema once (idempotent, also when nodes start together), migrate old
    SQLite data dirs, and make the data plane's signing secret, shared by every node."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA journal_mode = WAL")
        with transaction(conn):
            if conn.dialect.name == "postgresql":
                # Two nodes creating the tables at once would collide in the catalogue.
                conn.execute(text("SELECT pg_advisory_xact_lock(4141)"))
            metadata.create_all(conn)
            for table in metadata.tables.values():
                for index in table.indexes:
                    index.create(conn, checkfirst=True)
            _add_object_keys(conn)
            _unknown_places_as_empty(conn)
            insert_ignore(conn, meta, [{"name": "secret", "value": secrets.token_urlsafe(32)}])


def _add_object_keys(conn: Connection) -> None:
    """Data dirs made before PUTs wrote unique keys lack `object_key`; NULL there means
    the file lives at its old fixed key `artifact/upload/name`."""
    inspector = inspect(conn)
    for table in (upload_files, version_files):
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        if "object_key" not in columns:
            conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN object_key TEXT"))
    # Keys stored before keys had an origin all came from settings.
    if "origin" not in {c["name"] for c in inspector.get_columns("api_keys")}:
        conn.execute(text("ALTER TABLE api_keys ADD COLUMN origin TEXT NOT NULL DEFAULT "
                          "'config'"))


def _unknown_places_as_empty(conn: Connection) -> None:
    """Data dirs made before places had one stored form kept an unknown place as NULL in
    these tables (and as '' in `transfers`); now it is '' everywhere."""
    for table in (tokens, uploads, versions):
        conn.execute(table.update().where(table.c.place.is_(None)).values(place=""))


def serialise_starts(conn: Connection) -> None:
    """Inside a transaction: one node's start-up decision at a time (SQLite's write lock is
    held already; PostgreSQL takes an advisory lock until the transaction ends)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(4142)"))


def secret(conn: Connection) -> str:
    return conn.execute(select(meta.c.value).where(meta.c.name == "secret")).scalar_one()


def wipe(conn: Connection) -> None:
    with transaction(conn):
        for table in TABLES:
            conn.execute(table.delete())


# --- where the dialects differ -----------------------------------------------------------

def _insert(dialect: str) -> Any:
    """The dialect's own INSERT (with ON CONFLICT), imported when first used: a SQLite
    emulator never loads the PostgreSQL dialect (a tenth of its start-up)."""
    return importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert


@functools.cache
def _ignoring(dialect: str, table: Table) -> Any:
    return (_insert(dialect)(table).on_conflict_do_nothing()
            .execution_options(preserve_rowcount=True))


@functools.cache
def _adding(dialect: str, table: Table, column: str) -> Any:
    stmt = _insert(dialect)(table)
    key = [c.name for c in table.primary_key.columns]
    return stmt.on_conflict_do_update(
        index_elements=key, set_={column: table.c[column] + stmt.excluded[column]})


@functools.cache
def _putting(dialect: str, table: Table) -> Any:
    stmt = _insert(dialect)(table)
    key = [c.name for c in table.primary_key.columns]
    return stmt.on_conflict_do_update(
        index_elements=key,
        set_={c.name: stmt.excluded[c.name] for c in table.columns if c.name not in key})


def insert_ignore(conn: Connection, table: Table, rows: Sequence[dict]) -> int:
    """Insert rows whose key is new, skipping the others (`ON CONFLICT DO NOTHING`); the
    number inserted. Under PostgreSQL a racing insert of the same key waits, then skips."""
    if not rows:
        return 0
    stmt = _ignoring(conn.dialect.name, table)
    if len(rows) == 1:  # one execute, whose rowcount both drivers report exactly
        return conn.execute(stmt, rows[0]).rowcount
    return conn.execute(stmt, list(rows)).rowcount


def add_to(conn: Connection, table: Table, row: dict, column: str) -> None:
    """Insert `row`, or add its `column` to the row already under its key."""
    conn.execute(_adding(conn.dialect.name, table, column), row)


def put(conn: Connection, table: Table, row: dict) -> None:
    """Insert `row` (every column), or replace the other columns of the row under its key."""
    conn.execute(_putting(conn.dialect.name, table), row)


def member_of(dialect: str, column: ColumnElement, name: str) -> ColumnElement:
    """`column IN :name` as ONE bound parameter, however long the list (SQLite caps a
    statement's parameters): a JSON array under SQLite, an array under PostgreSQL. Its
    value is `members(dialect, values)`."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == any_(bindparam(name, type_=ARRAY(Text)))
    return column.in_(select(literal_column("value")).select_from(
        func.json_each(bindparam(name, type_=Text))))


def members(dialect: str, values: list[str]) -> Any:
    """The value of a `member_of` parameter."""
    return list(values) if dialect == "postgresql" else json.dumps(values)


class json_array(FunctionElement):  # noqa: N801 - reads as the SQL function it renders
    """A JSON array of one JSON object per row, as text: `json_array(k1, v1, k2, v2, ...)`
    aggregates over the (ordered) rows of its FROM."""

    inherit_cache = True
    type = Text()


class json_value(FunctionElement):  # noqa: N801
    """Text that holds JSON, embedded as JSON (not as a string) in `json_array`."""

    inherit_cache = True


@compiles(json_array, "sqlite")
def _json_array_sqlite(element: json_array, compiler: Any, **kw: Any) -> str:
    return f"json_group_array(json_object({compiler.process(element.clauses, **kw)}))"


@compiles(json_array, "postgresql")
def _json_array_pg(element: json_array, compiler: Any, **kw: Any) -> str:
    # json_agg over an ordered subquery keeps its order; no rows is '[]', not NULL.
    return (f"coalesce(json_agg(json_build_object({compiler.process(element.clauses, **kw)}))"
            "::text, '[]')")


@compiles(json_value, "sqlite")
def _json_value_sqlite(element: json_value, compiler: Any, **kw: Any) -> str:
    return f"json({compiler.process(element.clauses, **kw)})"


@compiles(json_value, "postgresql")
def _json_value_pg(element: json_value, compiler: Any, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS json)"


def now(conn: Connection) -> float:
    """Unix seconds by the database's clock, the one clock every node shares (expiry is
    compared across nodes); SQLite's is this machine's, read without a query."""
    if conn.dialect.name == "postgresql":
        return conn.exec_driver_sql("SELECT extract(epoch from clock_timestamp())::float8"
                                    ).scalar_one()
    return time.time()


class ordered_join(Join):  # noqa: N801 - used like `join`
    """`left JOIN right ON ...` with `left` kept as the outer loop: under SQLite a
    `CROSS JOIN ... ON` (its planner never reorders one), so rows come in the order of
    `left`'s index and need no sort; a plain join elsewhere."""

    inherit_cache = True


@compiles(ordered_join, "sqlite")
def _ordered_join_sqlite(element: ordered_join, compiler: Any, **kw: Any) -> str:
    kw["asfrom"] = True
    return (f"{compiler.process(element.left, **kw)} CROSS JOIN "
            f"{compiler.process(element.right, **kw)} ON "
            f"{compiler.process(element.onclause, **kw)}")


@compiles(ordered_join)
def _ordered_join_default(element: ordered_join, compiler: Any, **kw: Any) -> str:
    return compiler.visit_join(element, **kw)
