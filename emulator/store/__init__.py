"""The store seam: every statement the emulator runs, behind functions named by intent
(`artifacts.lock`, `versions.latest_step`, `uploads.mark_committed`, `keys.scopes`,
`nodes.others_seen_since`, `chaos.locked`, ...).

No module outside `emulator.store` (and the dialect layer under it, `emulator.db` and
`emulator.db.hotsql`) imports SQLAlchemy or a driver; an import-linter contract keeps it so.
Each function takes the connection of the request (`Backend.conn()`), so its caller decides
where a transaction begins and ends (`transaction`), and every statement is built once,
here. The engine, the schema's creation, the database's clock and which of its errors
mean "unreachable" are the dialect layer's, reached through the names re-exported below;
`Connection` and `Engine` are there for the callers' type hints.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine

from ..db import (
    DatabaseError,
    engine_for,
    initialise,
    now,
    shown_url,
    snapshot,
    transaction,
    unreachable,
)
from . import artifacts, chaos, keys, meta, nodes, overview, reset, uploads, usage, versions

__all__ = ["Connection", "DatabaseError", "Engine", "artifacts", "chaos", "engine_for",
           "initialise", "keys", "meta", "nodes", "now", "overview", "reset", "shown_url",
           "snapshot", "transaction", "unreachable", "uploads", "usage", "versions"]
