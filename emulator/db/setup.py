"""Making the schema once, also when nodes start together, and bringing data dirs made by
older emulators up to it."""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, Engine, inspect, text

from .dialects import insert_ignore
from .engines import transaction
from .schema import meta, metadata, tokens, upload_files, uploads, version_files, versions


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
