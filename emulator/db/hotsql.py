"""SELECTs of the hot path (every call's key and chaos rules, `versions/read`) run on the
driver's cursor, each compiled once per dialect.

SQLAlchemy's execution (parameter construction, the execution context, result wrapping)
costs about 0.2 ms a statement, four times what SQLite takes to answer one of these, and a
`versions/read` runs four. The statements stay SQLAlchemy Core built in their store modules;
only their execution skips the layers. Reads only, with plain column types (text, integers,
floats: nothing SQLAlchemy would convert), on the request's connection, so in its transaction
when there is one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Select

# (statement, dialect) -> (SQL text, bound names in order for a positional driver or None,
# the statement's own bound values, e.g. its LIMIT)
_compiled: dict[tuple[int, str], tuple[str, tuple[str, ...] | None, dict[str, Any]]] = {}
_lock = threading.Lock()


def _compile(conn: Connection, stmt: Select) -> tuple[str, tuple[str, ...] | None,
                                                      dict[str, Any]]:
    key = (id(stmt), conn.dialect.name)
    found = _compiled.get(key)
    if found is None:
        compiled = stmt.compile(dialect=conn.dialect)
        order = tuple(compiled.positiontup or ()) if compiled.positional else None
        found = (str(compiled), order, dict(compiled.params))
        with _lock:
            _compiled[key] = found
    return found


def rows(conn: Connection, stmt: Select, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every row of ``stmt`` (a module-level constant: it is cached by identity) as a dict."""
    sql, order, defaults = _compile(conn, stmt)
    values = {**defaults, **params}
    args: Any = tuple(values[n] for n in order) if order is not None else values
    dbapi = conn.dialect.loaded_dbapi
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, args)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    except dbapi.Error as exc:
        # As SQLAlchemy would raise it, so a lost database is a 503 (emulator.state.outages)
        lost = conn.dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor)
        raise DBAPIError.instance(sql, args, exc, dbapi.Error, connection_invalidated=lost,
                                  dialect=conn.dialect) from exc
    finally:
        try:
            cursor.close()
        except dbapi.Error:
            pass  # a cursor of a lost connection


def first(conn: Connection, stmt: Select, params: Mapping[str, Any]) -> dict[str, Any] | None:
    found = rows(conn, stmt, params)
    return found[0] if found else None


__all__ = ["first", "rows"]
