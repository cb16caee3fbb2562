"""Writing, committing and reading versions (VER-1..4, READ-1, FENCE-2..3, PLACE-4).

A write reserves an upload at the writer's location and hands out signed PUT URLs; a commit
is one write transaction that checks the epoch, the name and every file, then makes the
version visible at once. Files are never copied: a version lives where it was uploaded.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from .. import store
from ..core import names
from ..core.errors import (
    Fenced,
    Incomplete,
    InvalidArgument,
    NotAfterLatest,
    NotFound,
    VersionExists,
)
from ..core.keys import Principal
from ..core.names import Place
from ..core.stored import iso, place_from_text
from ..state.backend import Backend
from ..storage import storage_sizes
from . import filelists
from .replies import object_key, version_json
from .uploads import reclaim_expired_uploads, require_committable

Row = Mapping[str, Any]


def latest_step(backend: Backend, artifact: str) -> int | None:
    return store.versions.latest_step(backend.conn(), artifact,
                                      highest=backend.policy.latest_is_highest)


def check_epoch(backend: Backend, artifact: str, epoch: int, what: str) -> None:
    """FENCE-2: anything carrying an epoch older than the artifact's newest is refused."""
    # Locked (PostgreSQL): an open of this artifact waits until this write or commit ends.
    row = store.artifacts.lock(backend.conn(), artifact)
    assert row is not None  # a token's artifact exists
    if row["epoch"] > epoch and backend.policy.fencing:
        raise Fenced(
            f"{what} of epoch {epoch} refused: {artifact} was opened at epoch {row['epoch']} "
            f"by {row['holder']}"
        )


def _check_name(backend: Backend, artifact: str, version: str, step: int) -> None:
    overwrite = not backend.policy.versions_immutable
    if store.versions.exists(backend.conn(), artifact, step):
        if overwrite:
            return
        raise VersionExists(f"{artifact}/{version} is already committed; versions are immutable")
    latest = latest_step(backend, artifact)
    if latest is not None and step <= latest and not overwrite:
        raise NotAfterLatest(
            f"{version} is not after the latest {names.version_name(latest)} of {artifact}")


def write_version(
    backend: Backend,
    who: Principal,
    artifact: object,
    token: object,
    version: object,
    files: object,
    base_url: str,
    upload: object = None,
) -> dict:
    """Reserve an upload and sign a PUT URL per file; with `upload`, the files join that
    upload instead (VER-5: the ranks of one job writing one version)."""
    name = names.artifact_name(artifact)
    who.require("write", name)
    tok = backend.token(token, name)
    step = names.version_step(version)
    settings = backend.settings
    parsed = filelists.parse_write(files, settings.max_files, settings.max_file_size)
    if upload is not None and (not isinstance(upload, str) or not upload):
        raise InvalidArgument("upload must be the id a write answered")
    reclaim_expired_uploads(backend)
    now = backend.now()
    conn = backend.conn()
    with store.transaction(conn):
        if upload is None:
            filelists.check_joined(parsed, (), settings.max_files)
            up = _new_upload(backend, name, tok, str(version), step, now)
        else:
            up = _joined_upload(backend, name, upload, step, parsed, tok)
        store.uploads.declare(conn, up["id"], [(d.name, d.size, d.sha256) for d in parsed])
    loc = backend.location(up["location"])
    placement = backend.geography.place_for(place_from_text(up["place"]))
    expires = now + settings.url_lifetime
    urls = [
        {
            "name": d.name,
            "url": backend.signer.sign(
                base_url, "PUT", loc.id, object_key(name, up["id"], d.name), expires,
                u=up["id"], f=d.name, s=d.size, a=name, v=up["version"], r=up["place"],
            ),
        }
        for d in parsed
    ]
    return {
        "upload": up["id"],
        "location": loc.json(),
        "route": placement.route,
        "files": urls,
        "expires_at": iso(expires),
    }


def _new_upload(
    backend: Backend, artifact: str, tok: Row, version: str, step: int, now: float
) -> dict:
    """Inside the write's transaction: the epoch and the name are checked, then the upload
    is recorded at the writer's location."""
    check_epoch(backend, artifact, tok["epoch"], "write")
    _check_name(backend, artifact, version, step)
    placement = backend.geography.place_for(place_from_text(tok["place"]))
    up = {
        "id": "up_" + secrets.token_urlsafe(18), "artifact": artifact, "token": tok["token"],
        "epoch": tok["epoch"], "holder": tok["holder"], "version": version, "step": step,
        "location": placement.location.id, "place": tok["place"],
        "placement": placement.kind, "created_at": iso(now),
        "expires_at": now + backend.settings.upload_lifetime,
    }
    store.uploads.start(backend.conn(), up)
    return up


def _joined_upload(
    backend: Backend, artifact: str, upload: str, step: int, parsed: list, tok: Row
) -> Row:
    """Inside the write's transaction: the open upload that new files join (VER-5). Its
    400s come before its 404s, and those before its 409s (the contract's precedence)."""
    conn = backend.conn()
    up = store.uploads.lock(conn, upload, artifact)
    if up is None:
        raise NotFound(f"upload {upload} of {artifact} does not exist")
    # What the write itself gets wrong (another version, a name declared twice) is 400
    # even when the upload is committed or expired too, which is 404.
    if up["step"] != step:
        raise InvalidArgument(
            f"upload {upload} writes {up['version']}, not {names.version_name(step)}")
    earlier = store.uploads.names(conn, upload)
    filelists.check_joined(parsed, earlier, backend.settings.max_files)
    if up["state"] != "open" or up["expires_at"] < backend.now():
        raise NotFound(f"upload {upload} of {artifact} is committed or expired")
    # An upload never changes hands: the token and the upload must both be of the newest
    # epoch, so a newer open fences the files of the old one too.
    check_epoch(backend, artifact, min(up["epoch"], tok["epoch"]), "write")
    if tok["epoch"] != up["epoch"]:
        raise Fenced(f"upload {upload} was started under epoch {up['epoch']}, not "
                     f"{tok['epoch']}; an upload belongs to the open that started it")
    _check_name(backend, artifact, up["version"], step)
    return up


def commit_version(
    backend: Backend, who: Principal, artifact: object, token: object, upload: object,
    files: object = None,
) -> dict:
    name = names.artifact_name(artifact)
    who.require("write", name)
    tok = backend.token(token, name)
    if not isinstance(upload, str) or not upload:
        raise InvalidArgument("upload is required")
    listed = filelists.parse_commit(files)
    conn = backend.conn()
    held = _stored_sizes(backend, name, upload)  # before the lock: one stat per file
    with store.transaction(conn):
        # Locked (PostgreSQL): a PUT or a reclaim of this upload waits until the commit ends.
        up = store.uploads.lock(conn, upload, name)
        if up is None:
            raise NotFound(f"upload {upload} does not exist for {name}")
        stored = store.uploads.files(conn, upload)
        if up["state"] in ("open", "committed"):  # a reclaimed one is gone: 404 below
            filelists.check_listed_names(listed, stored)
        # An upload belongs to the token that started it: a newer token cannot launder it.
        if backend.policy.upload_keeps_its_epoch:
            check_epoch(backend, name, min(up["epoch"], tok["epoch"]), "commit")
        if up["state"] == "committed":
            raise VersionExists(f"{name}/{up['version']} is already committed")
        require_committable(backend, up)
        _check_name(backend, name, up["version"], up["step"])
        if backend.policy.commit_needs_files:
            filelists.check_complete(listed, stored)
            _check_held(backend, up, stored, held)
        _insert_version(backend, up, stored, backend.now())
    with store.snapshot(conn):
        row = store.versions.row(conn, name, up["step"])
        assert row is not None  # committed just now, and versions are deleted only by holders
        return version_json(backend, row, place_from_text(tok["place"]))


def _stored_sizes(backend: Backend, artifact: str, upload: str) -> dict[str, int | None]:
    """The size of each received file's object in this node's storage (None: missing)."""
    conn = backend.conn()
    location = store.uploads.location_of(conn, upload, artifact)
    if location is None or location not in backend.geography.locations:
        return {}
    keys = store.uploads.received_keys(conn, upload)
    bucket = backend.location(location).bucket
    return storage_sizes(backend.storage, bucket, keys)


def _check_held(backend: Backend, up: Row, files: Sequence[Row],
                held: dict[str, int | None]) -> None:
    """A commit never acknowledges a version whose bytes this node's storage lacks (a node
    on a shared database with storage of its own): each file's object must be there, whole.
    Objects a PUT replaced since the first look are looked at again."""
    bucket = backend.location(up["location"]).bucket
    again = [f["object_key"] for f in files if f["object_key"] not in held]
    held = {**held, **storage_sizes(backend.storage, bucket, again)}
    missing = [f["name"] for f in files
               if f["object_key"] and held.get(f["object_key"]) != f["received_size"]]
    if missing:
        raise Incomplete(
            f"{len(missing)} file(s) were received but are not in this node's storage: "
            + ", ".join(missing[:10]) + "; does every node share one storage?")


def _insert_version(backend: Backend, up: Row, files: Sequence[Row], now: float) -> None:
    conn = backend.conn()
    recorded = []
    for f in files:
        size, sha = filelists.received(f)
        recorded.append({"name": f["name"], "size": size, "sha256": sha,
                         "object_key": f["object_key"]})
    replaced = store.versions.insert(conn, {
        "artifact": up["artifact"], "step": up["step"], "version": up["version"],
        "location": up["location"], "size": sum(f["size"] for f in recorded),
        "created_at": iso(now), "epoch": up["epoch"], "holder": up["holder"],
        "place": up["place"], "placement": up["placement"], "upload_id": up["id"],
    }, recorded, replace=not backend.policy.versions_immutable)
    store.uploads.mark_committed(conn, up["id"])
    if not replaced:
        store.artifacts.count_versions(conn, up["artifact"], +1)


def read_version(
    backend: Backend,
    who: Principal,
    artifact: object,
    version: object,
    place: Place | None,
    base_url: str | None,
) -> dict:
    """READ-1: `latest` (or no version) is the committed version with the highest step."""
    name = names.artifact_name(artifact)
    who.require("read", name)
    step = None if version == "latest" else names.version_step(version)
    conn = backend.conn()
    # URLs count from before the snapshot: a delete it misses commits after this moment.
    now = backend.now() if base_url is not None else None
    # One snapshot: the version and its files as one commit left them, or 404, never a
    # version whose files a delete took between two statements.
    with store.snapshot(conn):
        if step is None:
            row = store.versions.latest_row(conn, name,
                                            highest=backend.policy.latest_is_highest)
            if row is None:
                require_artifact(backend, name)
                raise NotFound(f"{name} has no committed version")
        else:
            row = store.versions.row(conn, name, step)
        if row is None:
            require_artifact(backend, name)
            raise NotFound(f"{name} has no version {version}")
        return version_json(backend, row, place, base_url=base_url, now=now)


def list_versions(backend: Backend, who: Principal, artifact: object, place: Place | None) -> dict:
    name = names.artifact_name(artifact)
    who.require("read", name)
    with store.snapshot(backend.conn()):
        require_artifact(backend, name)
        rows = store.versions.every(backend.conn(), name)
    return {"versions": [version_json(backend, r, place, files=False) for r in rows]}


def require_artifact(backend: Backend, name: str) -> None:
    """404 `not_found` for an artifact nobody made (READ-1.b), for every call naming one."""
    if not store.artifacts.exists(backend.conn(), name):
        raise NotFound(f"artifact {name} does not exist")
