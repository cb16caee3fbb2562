"""An unknown place has one stored form, '', in every table, old data dirs included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from emulator import db
from emulator.core.names import Place
from emulator.core.stored import place_from_text, place_text

PLACE_TABLES = ("tokens", "uploads", "versions")
# The schema of data dirs made before the store moved to SQLAlchemy, and before PUTs
# recorded object keys (no `object_key` column) or places had one stored form.
OLD_SCHEMA = """
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


def initialise(path: Path) -> None:
    db.initialise(db.engine_for(db.sqlite_url(path)))


def test_unknown_place_is_stored_as_empty_text_and_reads_back_as_none() -> None:
    assert place_text(None) == ""
    assert place_from_text(place_text(None)) is None
    gcp = Place("gcp", "europe-west4")
    assert place_from_text(place_text(gcp)) == gcp


def test_new_data_dir_refuses_a_null_place(tmp_path: Path) -> None:
    path = tmp_path / "meta.sqlite"
    initialise(path)
    conn = sqlite3.connect(path)
    for table in PLACE_TABLES:
        notnull = {row[1]: row[3] for row in conn.execute(f"PRAGMA table_info({table})")}
        assert notnull["place"] == 1, table


def test_old_data_dir_null_places_become_empty_text(tmp_path: Path) -> None:
    path = tmp_path / "meta.sqlite"
    old_schema = OLD_SCHEMA.replace("place TEXT NOT NULL DEFAULT ''", "place TEXT")
    conn = sqlite3.connect(path)
    conn.executescript(old_schema)
    conn.execute("INSERT INTO tokens (token, artifact, epoch, holder, place, created_at) "
                 "VALUES ('t1', 'p/a', 1, 'h', NULL, '2026-01-01T00:00:00Z')")
    conn.commit()
    conn.close()

    initialise(path)

    conn = sqlite3.connect(path)
    assert conn.execute("SELECT place FROM tokens WHERE token = 't1'").fetchone() == ("",)
    for table in ("upload_files", "version_files"):  # added to an old dir's tables
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        assert "object_key" in columns, table
    for table in PLACE_TABLES:
        nulls = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE place IS NULL").fetchone()[0]  # noqa: S608
        assert nulls == 0, table
