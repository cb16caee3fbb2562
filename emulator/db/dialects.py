"""Where the dialects differ in a statement: upserts, a long `IN` list, JSON built by the
database, a join kept in its order. Each renders SQLite's or PostgreSQL's form, so no store
module names a dialect."""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table, Text, any_, bindparam, func, literal_column, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ColumnElement, FunctionElement, Join


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
