"""The schema: every table of the metadata store, in SQLAlchemy Core, for both engines.

`initialise` (emulator.db.setup) makes it; the store's statements are written against it.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, Index, MetaData, Table, Text

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
# whose keys differ from a live one's refuses to start (emulator.state.nodes).
nodes = Table(
    "nodes", metadata,
    _text("node_id", key=True),
    _text("keys"),
    _text("summary"),
    Column("seen_at", Float, nullable=False),
)

TABLES = (artifacts, tokens, uploads, upload_files, versions, version_files, transfers)
