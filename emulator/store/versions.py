"""Committed versions and their files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from .. import db
from ..db import hotsql as hot

V, VF = db.versions, db.version_files
Row = Mapping[str, Any]
_BY_ARTIFACT = V.c.artifact == bindparam("artifact")
_STEP = V.c.step == bindparam("step")
_HIGHEST = select(func.max(V.c.step)).where(_BY_ARTIFACT)
_LOWEST = select(func.min(V.c.step)).where(_BY_ARTIFACT)  # a deliberately stale latest
_VERSION = select(V).where(_BY_ARTIFACT, _STEP)
# One statement for `latest` (READ-1), not max(step) and then the row: reads are the hot path
_NEWEST = select(V).where(_BY_ARTIFACT).order_by(V.c.step.desc()).limit(1)
_OLDEST = select(V).where(_BY_ARTIFACT).order_by(V.c.step).limit(1)
_EXISTS = select(V.c.step).where(_BY_ARTIFACT, _STEP)
_EVERY = select(V).where(_BY_ARTIFACT).order_by(V.c.step)
_FILES = (select(VF.c.name, VF.c.size, VF.c.sha256, VF.c.object_key)
          .where(VF.c.artifact == bindparam("artifact"), VF.c.step == bindparam("step"))
          .order_by(VF.c.name))
_DROP = V.delete().where(_BY_ARTIFACT, _STEP)
_DROP_FILES = VF.delete().where(VF.c.artifact == bindparam("artifact"),
                                VF.c.step == bindparam("step"))


def latest_step(conn: Connection, artifact: str, *, highest: bool = True) -> int | None:
    """The highest committed step (READ-1); `highest=False` is the stale-latest fault's."""
    return conn.execute(_HIGHEST if highest else _LOWEST, {"artifact": artifact}).scalar()


def latest_row(conn: Connection, artifact: str, *, highest: bool = True) -> Row | None:
    """The version `latest` names (the highest step), or None when none is committed."""
    return hot.first(conn, _NEWEST if highest else _OLDEST, {"artifact": artifact})


def row(conn: Connection, artifact: str, step: int) -> Row | None:
    return hot.first(conn, _VERSION, {"artifact": artifact, "step": step})


def exists(conn: Connection, artifact: str, step: int) -> bool:
    return conn.execute(_EXISTS, {"artifact": artifact, "step": step}).first() is not None


def every(conn: Connection, artifact: str) -> Sequence[Row]:
    """Every committed version of the artifact, in step order."""
    return conn.execute(_EVERY, {"artifact": artifact}).mappings().all()


def files(conn: Connection, artifact: str, step: int) -> Sequence[Row]:
    return hot.rows(conn, _FILES, {"artifact": artifact, "step": step})


def insert(conn: Connection, version: Mapping[str, Any], files: Sequence[Mapping[str, Any]],
           *, replace: bool = False) -> bool:
    """Record a committed version and its files; True when it replaced one under its name
    (only a deliberately broken VER-2 asks to)."""
    key = {"artifact": version["artifact"], "step": version["step"]}
    replaced = False
    if replace:
        replaced = conn.execute(_DROP, key).rowcount > 0
        conn.execute(_DROP_FILES, key)
    conn.execute(V.insert(), dict(version))
    if files:
        conn.execute(VF.insert(), [{**key, **f} for f in files])
    return replaced


def drop(conn: Connection, artifact: str, step: int) -> None:
    """A deleted version leaves read and list at once (VER-7); its bytes stay for now."""
    key = {"artifact": artifact, "step": step}
    conn.execute(_DROP_FILES, key)
    conn.execute(_DROP, key)
