"""The metadata store's dialect layer: one schema in SQLAlchemy Core, two engines (SQLite
and PostgreSQL).

`emulator.store` writes every statement once, in Core, against the tables of `schema`; the
few places where the dialects differ (taking the write lock, upserts, JSON built by the
database, a long `IN` list, the database's clock) are functions here, so no store module
names a dialect. By concern: `schema` (the tables), `engines` (making and bounding
connections, transactions, the clock, which errors mean "unreachable"), `setup` (making
the schema, migrating old data dirs) and `dialects` (the forms of a statement that differ).
Their names are re-exported here; only `emulator.store` and `emulator.db.hotsql` import it.

SQLite (the default, a file in the data dir): WAL lets readers proceed beside one writer,
and `BEGIN IMMEDIATE` takes the write lock at the start of an open or a commit, so fencing
is decided by one serialised transaction even across worker processes.

PostgreSQL (the `database` setting): many emulator processes share one database. A
transaction there is READ COMMITTED, so every read-modify-write locks the rows it decides
on (`SELECT ... FOR UPDATE`, which SQLite's compiler leaves out: its write lock is already
held) and a first insert that may race another uses `ON CONFLICT`.
"""

from __future__ import annotations

from .dialects import (
    add_to,
    insert_ignore,
    json_array,
    json_value,
    member_of,
    members,
    ordered_join,
    put,
)
from .engines import (
    MAX_OVERFLOW,
    POOL_SIZE,
    DatabaseError,
    engine_for,
    is_postgresql,
    now,
    shown_url,
    snapshot,
    sqlite_url,
    transaction,
    unreachable,
)
from .schema import (
    TABLES,
    api_keys,
    artifacts,
    meta,
    metadata,
    nodes,
    tokens,
    transfers,
    upload_files,
    uploads,
    version_files,
    versions,
)
from .setup import initialise

__all__ = [
    "MAX_OVERFLOW", "POOL_SIZE", "TABLES", "DatabaseError", "add_to", "api_keys", "artifacts",
    "engine_for", "initialise", "insert_ignore", "is_postgresql", "json_array", "json_value",
    "member_of", "members", "meta", "metadata", "nodes", "now", "ordered_join", "put",
    "shown_url", "snapshot", "sqlite_url", "tokens", "transaction", "transfers", "unreachable",
    "upload_files", "uploads", "version_files", "versions",
]
