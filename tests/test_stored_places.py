"""An unknown place has one stored form, '', in every table, old data dirs included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from emulator import db
from emulator.names import Place
from emulator.stored import place_from_text, place_text

PLACE_TABLES = ("tokens", "uploads", "versions")


def test_unknown_place_is_stored_as_empty_text_and_reads_back_as_none() -> None:
    assert place_text(None) == ""
    assert place_from_text(place_text(None)) is None
    gcp = Place("gcp", "europe-west4")
    assert place_from_text(place_text(gcp)) == gcp


def test_new_data_dir_refuses_a_null_place(tmp_path: Path) -> None:
    path = tmp_path / "meta.sqlite"
    db.initialise(path)
    conn = sqlite3.connect(path)
    for table in PLACE_TABLES:
        notnull = {row[1]: row[3] for row in conn.execute(f"PRAGMA table_info({table})")}
        assert notnull["place"] == 1, table


def test_old_data_dir_null_places_become_empty_text(tmp_path: Path) -> None:
    path = tmp_path / "meta.sqlite"
    old_schema = db.SCHEMA.replace("place TEXT NOT NULL DEFAULT ''", "place TEXT")
    conn = sqlite3.connect(path)
    conn.executescript(old_schema)
    conn.execute("INSERT INTO tokens (token, artifact, epoch, holder, place, created_at) "
                 "VALUES ('t1', 'p/a', 1, 'h', NULL, '2026-01-01T00:00:00Z')")
    conn.commit()
    conn.close()

    db.initialise(path)

    conn = sqlite3.connect(path)
    assert conn.execute("SELECT place FROM tokens WHERE token = 't1'").fetchone() == ("",)
    for table in PLACE_TABLES:
        nulls = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE place IS NULL").fetchone()[0]  # noqa: S608
        assert nulls == 0, table
