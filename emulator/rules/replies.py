"""The contract's reply objects built from database rows: the Version object (with route
fields, and signed URLs on request), and where a version's files live in their bucket."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import store
from ..core.locations import route
from ..core.names import Place
from ..core.stored import iso, place_text
from ..state.backend import Backend


def object_key(artifact: str, upload_id: str, file_name: str) -> str:
    """Where a file lives in its bucket; the upload id keeps rival uploads apart."""
    return f"{artifact}/{upload_id}/{file_name}"


def route_fields(backend: Backend, location: Place, reader: Place | None) -> dict:
    """`route` and `cross_cloud` relative to the reader; null when nothing is known (XC-1)."""
    if reader is None:
        return {"route": None, "cross_cloud": None}
    cross = reader.cloud != location.cloud
    if not backend.policy.cross_cloud_true:
        cross = not cross
    return {"route": route(location, reader), "cross_cloud": cross}


def version_json(
    backend: Backend,
    row: Mapping[str, Any],
    reader: Place | None,
    *,
    files: bool = True,
    base_url: str | None = None,
    now: float | None = None,
) -> dict:
    """A Version object; with `base_url`, each file gets a signed GET URL under it, valid
    for `url_lifetime` from `now` (taken before the rows were read, so a delete that
    committed after them keeps the bytes at least as long)."""
    loc = backend.location(row["location"])
    out = {
        "artifact": row["artifact"],
        "version": row["version"],
        "step": row["step"],
        "location": loc.json(),
        "size": row["size"],
        "created_at": row["created_at"],
        "epoch": row["epoch"],
        "holder": row["holder"],
    }
    if files:
        rows = store.versions.files(backend.conn(), row["artifact"], row["step"])
        out["files"] = [{"name": f["name"], "size": f["size"], "sha256": f["sha256"]} for f in rows]
        # Each file is read from the object its commit recorded (NULL: a pre-upgrade key).
        keys = [
            f["object_key"] or object_key(row["artifact"], row["upload_id"], f["name"])
            for f in rows
        ]
    out.update(route_fields(backend, loc.place, reader))
    if files and base_url is not None:
        expires = (backend.now() if now is None else now) + backend.settings.url_lifetime
        for f, key in zip(out["files"], keys, strict=True):
            f["url"] = backend.signer.sign(
                base_url,
                "GET",
                loc.id,
                key,
                expires,
                a=row["artifact"],
                v=row["version"],
                r=place_text(reader),
            )
        out["urls_expire_at"] = iso(expires)
    return out
