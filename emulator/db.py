"""SQLite metadata: schema, connections, and the write transaction every rule runs in.

WAL lets readers proceed beside one writer; `BEGIN IMMEDIATE` takes the write lock at the
start of an open or a commit, so fencing is decided by one serialised transaction even with
several worker processes on one data directory.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS artifacts (
    name TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL,
    holder TEXT,
    versions INTEGER NOT NULL DEFAULT 0,
    forked_from_artifact TEXT,
    forked_from_version TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    token TEXT PRIMARY KEY,
    artifact TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    holder TEXT NOT NULL,
    place TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    artifact TEXT NOT NULL,
    token TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    holder TEXT NOT NULL,
    version TEXT NOT NULL,
    step INTEGER NOT NULL,
    location TEXT NOT NULL,
    place TEXT NOT NULL DEFAULT '',
    placement TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'open',
    created_at TEXT NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS uploads_by_state ON uploads (state, expires_at);
CREATE TABLE IF NOT EXISTS upload_files (
    upload_id TEXT NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    received_size INTEGER,
    received_sha256 TEXT,
    object_key TEXT,
    PRIMARY KEY (upload_id, name)
);
CREATE TABLE IF NOT EXISTS versions (
    artifact TEXT NOT NULL,
    step INTEGER NOT NULL,
    version TEXT NOT NULL,
    location TEXT NOT NULL,
    size INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    holder TEXT NOT NULL,
    place TEXT NOT NULL DEFAULT '',
    placement TEXT NOT NULL,
    upload_id TEXT NOT NULL,
    PRIMARY KEY (artifact, step)
);
CREATE TABLE IF NOT EXISTS version_files (
    artifact TEXT NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    object_key TEXT,
    PRIMARY KEY (artifact, step, name)
);
CREATE TABLE IF NOT EXISTS transfers (
    direction TEXT NOT NULL,
    artifact TEXT NOT NULL,
    version TEXT NOT NULL,
    location TEXT NOT NULL,
    place TEXT NOT NULL,
    route TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (direction, artifact, version, location, place, route)
);
-- The usage report reads transfers by artifact in (artifact, version, direction) order:
-- covering that order means no sort and no table lookups, even over 100,000 rows.
CREATE INDEX IF NOT EXISTS transfers_report
    ON transfers (artifact, version, direction, location, place, route, bytes);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT NOT NULL,
    prefix TEXT NOT NULL,
    access TEXT NOT NULL,
    PRIMARY KEY (key_hash, prefix)
);
"""

TABLES = (
    "artifacts",
    "tokens",
    "uploads",
    "upload_files",
    "versions",
    "version_files",
    "transfers",
)


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode; transactions are opened explicitly."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    # NORMAL is durable across a killed process in WAL mode; only an OS crash can lose the tail.
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def initialise(path: Path) -> None:
    """Create the schema once (idempotent) and the data plane's signing secret."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        with transaction(conn):
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            _add_object_keys(conn)
            _unknown_places_as_empty(conn)
            conn.execute(
                "INSERT OR IGNORE INTO meta (name, value) VALUES ('secret', ?)",
                (secrets.token_urlsafe(32),),
            )
    finally:
        conn.close()


def _add_object_keys(conn: sqlite3.Connection) -> None:
    """Data dirs made before PUTs wrote unique keys lack `object_key`; NULL there means
    the file lives at its old fixed key `artifact/upload/name`."""
    for table in ("upload_files", "version_files"):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}  # noqa: S608
        if "object_key" not in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN object_key TEXT")  # noqa: S608


def _unknown_places_as_empty(conn: sqlite3.Connection) -> None:
    """Data dirs made before places had one stored form kept an unknown place as NULL in
    these tables (and as '' in `transfers`); now it is '' everywhere."""
    for table in ("tokens", "uploads", "versions"):
        conn.execute(f"UPDATE {table} SET place = '' WHERE place IS NULL")  # noqa: S608


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction holding the database's write lock from its first statement."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (e.g. on I/O errors)
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def secret(conn: sqlite3.Connection) -> str:
    return conn.execute("SELECT value FROM meta WHERE name = 'secret'").fetchone()[0]


def wipe(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        for table in TABLES:
            conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
