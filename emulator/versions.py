"""Writing, committing and reading versions (VER-1..4, READ-1, FENCE-2..3, PLACE-4).

A write reserves an upload at the writer's location and hands out signed PUT URLs; a commit
is one write transaction that checks the epoch, the name and every file, then makes the
version visible at once. Files are never copied: a version lives where it was uploaded.
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, RowMapping, bindparam, func, select

from . import db, names
from .backend import Backend
from .errors import (
    Fenced,
    Incomplete,
    InvalidArgument,
    NotAfterLatest,
    NotFound,
    PayloadTooLarge,
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


def _parse_files(backend: Backend, files: object) -> list[tuple[str, int, str]]:
    if not isinstance(files, list):
        raise InvalidArgument("files must be a list of {name, size, sha256}")
    if len(files) > backend.settings.max_files:
        raise PayloadTooLarge(f"at most {backend.settings.max_files} files per version")
    out, seen = [], set()
    for f in files:
        if not isinstance(f, dict) or not set(f) <= {"name", "size", "sha256"}:
            raise InvalidArgument("each file is {name, size, sha256} and nothing else")
        name = names.file_name(f.get("name"))
        size = names.size(f.get("size"))
        sha = names.sha256_hex(f.get("sha256"))
        if name in seen:
            raise InvalidArgument(f"file {name!r} is listed twice")
        if size > backend.settings.max_file_size:
            raise PayloadTooLarge(
                f"{name} declares {size} bytes; the limit is {backend.settings.max_file_size}"
            )
        seen.add(name)
        out.append((name, size, sha))
    # A file cannot also be a folder of another file's path. Collecting every folder once
    # is linear in the names' total length (10,000 names: milliseconds, not seconds).
    folders = {name[:i] for name in seen for i, ch in enumerate(name) if ch == "/"}
    clash = seen & folders
    if clash:
        raise InvalidArgument(f"file {min(clash)!r} is also a folder of another file")
    return out


def write_version(
    backend: Backend,
    who: Principal,
    artifact: object,
    token: object,
    version: object,
    files: object,
    base_url: str,
) -> dict:
    name = names.artifact_name(artifact)
    who.require("write", name)
    tok = backend.token(token, name)
    step = names.version_step(version)
    reclaim_expired_uploads(backend)
    parsed = _parse_files(backend, files)
    place = place_from_text(tok["place"])
    placement = backend.geography.place_for(place)
    upload_id = "up_" + secrets.token_urlsafe(18)
    now = backend.now()
    expires = now + backend.settings.url_lifetime
    conn = backend.conn()
    with db.transaction(conn):
        _check_epoch(backend, name, tok["epoch"], "write")
        _check_name(backend, name, str(version), step)
        conn.execute(U.insert(), {
            "id": upload_id, "artifact": name, "token": tok["token"], "epoch": tok["epoch"],
            "holder": tok["holder"], "version": version, "step": step,
            "location": placement.location.id, "place": tok["place"],
            "placement": placement.kind, "created_at": iso(now),
            "expires_at": now + backend.settings.upload_lifetime,
        })
        if parsed:
            conn.execute(UF.insert(), [{"upload_id": upload_id, "name": n, "size": s,
                                        "sha256": h} for n, s, h in parsed])
    loc = placement.location
    urls = [
        {
            "name": n,
            "url": backend.signer.sign(
                base_url,
                "PUT",
                loc.id,
                object_key(name, upload_id, n),
                expires,
                u=upload_id,
                f=n,
                s=s,
                a=name,
                v=version,
                r=tok["place"],
            ),
        }
        for n, s, _ in parsed
    ]
    return {
        "upload": upload_id,
        "location": loc.json(),
        "route": placement.route,
        "files": urls,
        "expires_at": iso(expires),
    }


def commit_version(
    backend: Backend, who: Principal, artifact: object, token: object, upload: object
) -> dict:
    name = names.artifact_name(artifact)
    who.require("write", name)
    tok = backend.token(token, name)
    if not isinstance(upload, str) or not upload:
        raise InvalidArgument("upload is required")
    conn = backend.conn()
    with db.transaction(conn):
        # Locked (PostgreSQL): a PUT or a reclaim of this upload waits until the commit ends.
        up = conn.execute(_UPLOAD, {"id": upload, "artifact": name}).mappings().first()
        if up is None:
            raise NotFound(f"upload {upload} does not exist for {name}")
        # An upload belongs to the token that started it: a newer token cannot launder it.
        if "open-not-atomic" not in backend.faults:
            _check_epoch(backend, name, min(up["epoch"], tok["epoch"]), "commit")
        if up["state"] == "committed":
            raise VersionExists(f"{name}/{up['version']} is already committed")
        require_committable(backend, up)
        _check_name(backend, name, up["version"], up["step"])
        files = conn.execute(_UPLOAD_FILES, {"id": upload}).mappings().all()
        missing = [
            f["name"]
            for f in files
            if f["received_size"] != f["size"] or f["received_sha256"] != f["sha256"]
        ]
        if missing and "commit-without-files" not in backend.faults:
            raise Incomplete(
                f"{len(missing)} file(s) not uploaded with their declared size and sha256: "
                + ", ".join(missing[:10])
            )
        _insert_version(conn, up, files, backend.now())
    row = conn.execute(_VERSION, {"artifact": name, "step": up["step"]}).mappings().one()
    return version_json(backend, row, place_from_text(tok["place"]))


def _insert_version(
    conn: Connection, up: RowMapping, files: list[RowMapping], now: float
) -> None:
    artifact, step = up["artifact"], up["step"]
    key = {"artifact": artifact, "step": step}
    replaced = conn.execute(_DROP_VERSION, key).rowcount
    conn.execute(_DROP_FILES, key)
    conn.execute(V.insert(), {
        **key, "version": up["version"], "location": up["location"],
        "size": sum(f["size"] for f in files), "created_at": iso(now), "epoch": up["epoch"],
        "holder": up["holder"], "place": up["place"], "placement": up["placement"],
        "upload_id": up["id"],
    })
    if files:
        conn.execute(VF.insert(), [
            {"artifact": artifact, "step": step, "name": f["name"], "size": f["size"],
             "sha256": f["sha256"], "object_key": f["object_key"]} for f in files])
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
