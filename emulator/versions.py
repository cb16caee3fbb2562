"""Writing, committing and reading versions (VER-1..4, READ-1, FENCE-2..3, PLACE-4).

A write reserves an upload at the writer's location and hands out signed PUT URLs; a commit
is one write transaction that checks the epoch, the name and every file, then makes the
version visible at once. Files are never copied: a version lives where it was uploaded.
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, RowMapping, bindparam, func, select

from . import db, filelists, names
from .backend import Backend
from .errors import (
    Fenced,
    InvalidArgument,
    NotAfterLatest,
    NotFound,
    VersionExists,
)
from .keys import Principal
from .names import Place
from .replies import object_key, version_json
from .stored import iso, place_from_text
from .uploads import reclaim_expired_uploads, require_committable

A, V, U, UF = db.artifacts, db.versions, db.uploads, db.upload_files
_BY_ARTIFACT = V.c.artifact == bindparam("artifact")
_LATEST = select(func.max(V.c.step)).where(_BY_ARTIFACT)
_EARLIEST = select(func.min(V.c.step)).where(_BY_ARTIFACT)  # the stale-latest fault
_VERSION = select(V).where(_BY_ARTIFACT, V.c.step == bindparam("step"))
_HAS_VERSION = select(V.c.step).where(_BY_ARTIFACT, V.c.step == bindparam("step"))
_EPOCH = (select(A.c.epoch, A.c.holder).where(A.c.name == bindparam("artifact"))
          .with_for_update())
_UPLOAD = (select(U).where(U.c.id == bindparam("id"), U.c.artifact == bindparam("artifact"))
           .with_for_update())
_UPLOAD_FILES = select(UF).where(UF.c.upload_id == bindparam("id")).order_by(UF.c.name)
_UPLOAD_NAMES = select(UF.c.name).where(UF.c.upload_id == bindparam("id"))
_ALL_VERSIONS = select(V).where(_BY_ARTIFACT).order_by(V.c.step)
_ARTIFACT_EXISTS = select(A.c.name).where(A.c.name == bindparam("artifact"))
VF = db.version_files
_STEP = (bindparam("artifact"), bindparam("step"))
_DROP_VERSION = V.delete().where(V.c.artifact == _STEP[0], V.c.step == _STEP[1])
_DROP_FILES = VF.delete().where(VF.c.artifact == _STEP[0], VF.c.step == _STEP[1])
_COMMITTED = U.update().where(U.c.id == bindparam("upload")).values(state="committed")
_COUNTED = (A.update().where(A.c.name == bindparam("artifact"))
            .values(versions=A.c.versions + 1))


def latest_step(backend: Backend, artifact: str) -> int | None:
    query = _EARLIEST if "stale-latest" in backend.faults else _LATEST
    return backend.conn().execute(query, {"artifact": artifact}).scalar()


def _check_epoch(backend: Backend, artifact: str, epoch: int, what: str) -> None:
    """FENCE-2: anything carrying an epoch older than the artifact's newest is refused."""
    # Locked (PostgreSQL): an open of this artifact waits until this write or commit ends.
    row = backend.conn().execute(_EPOCH, {"artifact": artifact}).mappings().one()
    if row["epoch"] > epoch and "no-fencing" not in backend.faults:
        raise Fenced(
            f"{what} of epoch {epoch} refused: {artifact} was opened at epoch {row['epoch']} "
            f"by {row['holder']}"
        )


def _check_name(backend: Backend, artifact: str, version: str, step: int) -> None:
    conn = backend.conn()
    overwrite = "version-overwrite" in backend.faults
    if conn.execute(_HAS_VERSION, {"artifact": artifact, "step": step}).first():
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
    with db.transaction(conn):
        if upload is None:
            filelists.check_joined(parsed, (), settings.max_files)
            up = _new_upload(backend, name, tok, str(version), step, now)
        else:
            up = _joined_upload(backend, name, upload, step, parsed, tok)
        if parsed:
            conn.execute(UF.insert(), [{"upload_id": up["id"], "name": d.name, "size": d.size,
                                        "sha256": d.sha256} for d in parsed])
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
    backend: Backend, artifact: str, tok: RowMapping, version: str, step: int, now: float
) -> dict:
    """Inside the write's transaction: the epoch and the name are checked, then the upload
    is recorded at the writer's location."""
    _check_epoch(backend, artifact, tok["epoch"], "write")
    _check_name(backend, artifact, version, step)
    placement = backend.geography.place_for(place_from_text(tok["place"]))
    up = {
        "id": "up_" + secrets.token_urlsafe(18), "artifact": artifact, "token": tok["token"],
        "epoch": tok["epoch"], "holder": tok["holder"], "version": version, "step": step,
        "location": placement.location.id, "place": tok["place"],
        "placement": placement.kind, "created_at": iso(now),
        "expires_at": now + backend.settings.upload_lifetime,
    }
    backend.conn().execute(U.insert(), up)
    return up


def _joined_upload(
    backend: Backend, artifact: str, upload: str, step: int, parsed: list, tok: RowMapping
) -> RowMapping:
    """Inside the write's transaction: the open upload that new files join (VER-5). Its
    400s come before its 404s, and those before its 409s (the contract's precedence)."""
    conn = backend.conn()
    up = conn.execute(_UPLOAD, {"id": upload, "artifact": artifact}).mappings().first()
    if up is None or up["state"] != "open" or up["expires_at"] < backend.now():
        raise NotFound(f"upload {upload} of {artifact} does not exist, is committed or expired")
    if up["step"] != step:
        raise InvalidArgument(
            f"upload {upload} writes {up['version']}, not {names.version_name(step)}")
    earlier = conn.execute(_UPLOAD_NAMES, {"id": upload}).scalars().all()
    filelists.check_joined(parsed, earlier, backend.settings.max_files)
    # An upload never changes hands: the token and the upload must both be of the newest
    # epoch, so a newer open fences the files of the old one too.
    _check_epoch(backend, artifact, min(up["epoch"], tok["epoch"]), "write")
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
    with db.transaction(conn):
        # Locked (PostgreSQL): a PUT or a reclaim of this upload waits until the commit ends.
        up = conn.execute(_UPLOAD, {"id": upload, "artifact": name}).mappings().first()
        if up is None:
            raise NotFound(f"upload {upload} does not exist for {name}")
        stored = conn.execute(_UPLOAD_FILES, {"id": upload}).mappings().all()
        if up["state"] in ("open", "committed"):  # a reclaimed one is gone: 404 below
            filelists.check_listed_names(listed, stored)
        # An upload belongs to the token that started it: a newer token cannot launder it.
        if "open-not-atomic" not in backend.faults:
            _check_epoch(backend, name, min(up["epoch"], tok["epoch"]), "commit")
        if up["state"] == "committed":
            raise VersionExists(f"{name}/{up['version']} is already committed")
        require_committable(backend, up)
        _check_name(backend, name, up["version"], up["step"])
        if "commit-without-files" not in backend.faults:
            filelists.check_complete(listed, stored)
        _insert_version(conn, up, stored, backend.now())
    row = conn.execute(_VERSION, {"artifact": name, "step": up["step"]}).mappings().one()
    return version_json(backend, row, place_from_text(tok["place"]))


def _insert_version(
    conn: Connection, up: RowMapping, files: list[RowMapping], now: float
) -> None:
    artifact, step = up["artifact"], up["step"]
    key = {"artifact": artifact, "step": step}
    replaced = conn.execute(_DROP_VERSION, key).rowcount
    conn.execute(_DROP_FILES, key)
    recorded = [(f, *filelists.received(f)) for f in files]
    conn.execute(V.insert(), {
        **key, "version": up["version"], "location": up["location"],
        "size": sum(size for _, size, _ in recorded), "created_at": iso(now),
        "epoch": up["epoch"], "holder": up["holder"], "place": up["place"],
        "placement": up["placement"], "upload_id": up["id"],
    })
    if files:
        conn.execute(VF.insert(), [
            {"artifact": artifact, "step": step, "name": f["name"], "size": size,
             "sha256": sha, "object_key": f["object_key"]} for f, size, sha in recorded])
    conn.execute(_COMMITTED, {"upload": up["id"]})
    if not replaced:
        conn.execute(_COUNTED, {"artifact": artifact})


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
    if version == "latest":
        step = latest_step(backend, name)
        if step is None:
            require_artifact(backend, name)
            raise NotFound(f"{name} has no committed version")
    else:
        step = names.version_step(version)
    row = backend.conn().execute(_VERSION, {"artifact": name, "step": step}).mappings().first()
    if row is None:
        require_artifact(backend, name)
        raise NotFound(f"{name} has no version {version}")
    return version_json(backend, row, place, base_url=base_url)


def list_versions(backend: Backend, who: Principal, artifact: object, place: Place | None) -> dict:
    name = names.artifact_name(artifact)
    who.require("read", name)
    require_artifact(backend, name)
    rows = backend.conn().execute(_ALL_VERSIONS, {"artifact": name}).mappings().all()
    return {"versions": [version_json(backend, r, place, files=False) for r in rows]}


def require_artifact(backend: Backend, name: str) -> None:
    """404 `not_found` for an artifact nobody made (READ-1.b), for every call naming one."""
    if backend.conn().execute(_ARTIFACT_EXISTS, {"artifact": name}).first() is None:
        raise NotFound(f"artifact {name} does not exist")
