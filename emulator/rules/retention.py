"""Deleting versions that are not the latest (VER-7): how keep-the-last-k bounds a store.

A delete is one transaction, like a commit: the artifact's row is locked, the token must be
of its newest epoch, and the version leaves read, list and the usage page's placements at
once. Its bytes stay until every URL given out before the delete has expired (counted from
its commit, so also URLs given while it waited for the artifact's lock), so a load that
began completes; the upload is marked `deleted` with that expiry, and the reclaim of expired
uploads (uploads.reclaim_expired_uploads) removes the bytes after it.
"""

from __future__ import annotations

from .. import store
from ..core import names
from ..core.errors import IsLatest, NotFound
from ..core.keys import Principal
from ..core.stored import iso
from ..state.backend import Backend
from .uploads import reclaim_expired_uploads
from .versions import check_epoch

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
    with store.transaction(conn):
        # Locked (PostgreSQL): an open, a commit or another delete waits until this ends.
        store.artifacts.lock(conn, name)
        now = backend.now()  # after the lock: reads went on while this delete waited
        row = store.versions.row(conn, name, step)
        if row is None:  # a 404 comes before a 409
            raise NotFound(f"{name} has no version {version}")
        check_epoch(backend, name, tok["epoch"], "delete")  # FENCE-2, as writes and commits
        if store.versions.latest_step(conn, name) == step:
            raise IsLatest(f"{version} is the latest version of {name}; a run resumes from "
                           "it, so it is never deleted")
        store.versions.drop(conn, name, step)
        store.artifacts.count_versions(conn, name, -1)
        store.uploads.mark_deleted(conn, row["upload_id"],
                                   now + backend.settings.url_lifetime + _SLACK)
    # A read that saw the version took its time before its snapshot, so before this
    # commit: the bytes stay until a lifetime after the commit, whatever the commit waited.
    store.uploads.mark_deleted(conn, row["upload_id"],
                               backend.now() + backend.settings.url_lifetime + _SLACK)
    reclaim_expired_uploads(backend)  # older deletes' bytes, whose URLs have expired since
    return {"artifact": name, "version": names.version_name(step), "deleted_at": iso(now)}
