"""Deleting versions that are not the latest (VER-7): how keep-the-last-k bounds a store.

A delete is one transaction, like a commit: the artifact's row is locked, the token must be
of its newest epoch, and the version leaves read, list and the usage page's placements at
once. Its bytes stay until every URL given out before the delete has expired, so a load that
began completes; the upload is marked `deleted` with that expiry, and the reclaim of expired
uploads (uploads.reclaim_expired_uploads) removes the bytes after it.
"""

from __future__ import annotations

from sqlalchemy import bindparam, select

from . import db, names
from .backend import Backend
from .errors import Fenced, IsLatest, NotFound
from .keys import Principal
from .stored import iso
from .uploads import reclaim_expired_uploads

A, V, VF, U = db.artifacts, db.versions, db.version_files, db.uploads
_ARTIFACT = (select(A.c.epoch, A.c.holder).where(A.c.name == bindparam("artifact"))
             .with_for_update())
_VERSION = (select(V.c.step, V.c.upload_id)
            .where(V.c.artifact == bindparam("artifact"), V.c.step == bindparam("step")))
_LATEST = select(V.c.step).where(V.c.artifact == bindparam("artifact")).order_by(
    V.c.step.desc()).limit(1)
_KEY = (bindparam("artifact"), bindparam("step"))
_DROP_VERSION = V.delete().where(V.c.artifact == _KEY[0], V.c.step == _KEY[1])
_DROP_FILES = VF.delete().where(VF.c.artifact == _KEY[0], VF.c.step == _KEY[1])
_UNCOUNTED = (A.update().where(A.c.name == bindparam("artifact"))
              .values(versions=A.c.versions - 1))
_MARK_DELETED = (U.update().where(U.c.id == bindparam("upload"))
                 .values(state="deleted", expires_at=bindparam("bytes_until")))
# A URL's payload keeps its expiry to the millisecond; a second more covers the rounding.
_SLACK = 1.0


def delete_version(
    backend: Backend, who: Principal, artifact: object, token: object, version: object
) -> dict:
    """VER-7: the holder of the newest epoch deletes a committed version but the latest."""
    name = names.artifact_name(artifact)
    who.require("write", name)
    tok = backend.token(token, name)
    step = names.version_step(version)
    conn = backend.conn()
    now = backend.now()
    with db.transaction(conn):
        # Locked (PostgreSQL): an open, a commit or another delete waits until this ends.
        art = conn.execute(_ARTIFACT, {"artifact": name}).mappings().one()
        row = conn.execute(_VERSION, {"artifact": name, "step": step}).mappings().first()
        if row is None:
            raise NotFound(f"{name} has no version {version}")
        if art["epoch"] > tok["epoch"]:
            raise Fenced(f"delete of epoch {tok['epoch']} refused: {name} was opened at epoch "
                         f"{art['epoch']} by {art['holder']}")
        if conn.execute(_LATEST, {"artifact": name}).scalar() == step:
            raise IsLatest(f"{version} is the latest version of {name}; a run resumes from "
                           "it, so it is never deleted")
        key = {"artifact": name, "step": step}
        conn.execute(_DROP_FILES, key)
        conn.execute(_DROP_VERSION, key)
        conn.execute(_UNCOUNTED, {"artifact": name})
        conn.execute(_MARK_DELETED, {"upload": row["upload_id"],
                                     "bytes_until": now + backend.settings.url_lifetime + _SLACK})
    reclaim_expired_uploads(backend)  # older deletes' bytes, whose URLs have expired since
    return {"artifact": name, "version": names.version_name(step), "deleted_at": iso(now)}
