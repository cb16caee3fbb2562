"""What the emulator's own pages read of everything at once: the dashboard's timelines and
`/_emulator/state`. Outside the contract, read-only, and never on a hot path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, text

from .. import db

A, V, U, T, TK = db.artifacts, db.versions, db.uploads, db.transfers, db.tokens
Row = Mapping[str, Any]

_CROSS_CLOUD_READS = (select(T.c.artifact, T.c.version, T.c.place)
                      .where(T.c.direction == "read", T.c.route == "cross_cloud")
                      .order_by(T.c.place))
_FORKS = (select(A.c.name, A.c.forked_from_artifact, A.c.forked_from_version)
          .where(A.c.forked_from_artifact.is_not(None)).order_by(A.c.name))
_OPENS = select(TK).order_by(TK.c.artifact, TK.c.epoch)
_MARKS = (select(V.c.artifact, V.c.version, V.c.step, V.c.location, V.c.size, V.c.epoch,
                 V.c.holder, V.c.placement, V.c.created_at).order_by(V.c.artifact, V.c.step))
_EVERY_ARTIFACT = select(A).order_by(A.c.name)
_OPEN_UPLOADS_OF = (select(U.c.version, U.c.epoch, U.c.holder, U.c.location)
                    .where(U.c.artifact == bindparam("artifact"), U.c.state == "open")
                    .order_by(U.c.step))
_ARTIFACT_SUMMARIES = select(A.c.name, A.c.epoch, A.c.holder, A.c.versions,
                             A.c.forked_from_artifact, A.c.forked_from_version,
                             A.c.created_at).order_by(A.c.name)
_VERSION_SUMMARIES = (select(V.c.version, V.c.location, V.c.size, V.c.epoch, V.c.holder,
                             V.c.placement)
                      .where(V.c.artifact == bindparam("artifact")).order_by(V.c.step))
_OPEN_UPLOAD_COUNT = select(func.count()).select_from(U).where(U.c.state == "open")
_PING = text("SELECT 1")


def cross_cloud_reads(conn: Connection) -> Sequence[Row]:
    """Every cross-cloud read: which place paid egress for which version."""
    return conn.execute(_CROSS_CLOUD_READS).mappings().all()


def forks(conn: Connection) -> Sequence[Row]:
    """Every forked artifact with the version it was forked from."""
    return conn.execute(_FORKS).mappings().all()


def opens(conn: Connection) -> Sequence[Row]:
    """Every open (token) of every artifact, in epoch order."""
    return conn.execute(_OPENS).mappings().all()


def version_marks(conn: Connection) -> Sequence[Row]:
    """Every committed version's facts for a timeline, in step order."""
    return conn.execute(_MARKS).mappings().all()


def every_artifact(conn: Connection) -> Sequence[Row]:
    return conn.execute(_EVERY_ARTIFACT).mappings().all()


def open_uploads_of(conn: Connection, artifact: str) -> Sequence[Row]:
    """Uploads of an artifact never committed (uploading, or refused once fenced)."""
    return conn.execute(_OPEN_UPLOADS_OF, {"artifact": artifact}).mappings().all()


def artifact_summaries(conn: Connection) -> list[dict[str, Any]]:
    """Every artifact with the summary of each of its versions (`/_emulator/state`)."""
    out = []
    for row in conn.execute(_ARTIFACT_SUMMARIES).mappings().all():
        versions = conn.execute(_VERSION_SUMMARIES, {"artifact": row["name"]}).mappings().all()
        out.append({**dict(row), "versions": [dict(v) for v in versions]})
    return out


def open_upload_count(conn: Connection) -> int:
    return int(conn.execute(_OPEN_UPLOAD_COUNT).scalar_one())


def ping(conn: Connection) -> None:
    """Raises unless the database answers (health)."""
    conn.execute(_PING).scalar_one()


__all__ = ["artifact_summaries", "cross_cloud_reads", "every_artifact", "forks",
           "open_upload_count", "open_uploads_of", "opens", "ping", "version_marks"]
