"""Writing, committing and reading versions (VER-1..4, READ-1, FENCE-2..3, PLACE-4).

A write reserves an upload at the writer's location and hands out signed PUT URLs; a commit
is one write transaction that checks the epoch, the name and every file, then makes the
version visible at once. Files are never copied: a version lives where it was uploaded.
"""

from __future__ import annotations

import secrets
import sqlite3

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


def latest_step(backend: Backend, artifact: str) -> int | None:
    agg = "MIN" if "stale-latest" in backend.faults else "MAX"
    row = (
        backend.conn()
        .execute(f"SELECT {agg}(step) FROM versions WHERE artifact = ?", (artifact,))
        .fetchone()
    )
    return row[0]


def _check_epoch(backend: Backend, artifact: str, epoch: int, what: str) -> None:
    """FENCE-2: anything carrying an epoch older than the artifact's newest is refused."""
    row = (
        backend.conn()
        .execute("SELECT epoch, holder FROM artifacts WHERE name = ?", (artifact,))
        .fetchone()
    )
    if row["epoch"] > epoch and "no-fencing" not in backend.faults:
        raise Fenced(
            f"{what} of epoch {epoch} refused: {artifact} was opened at epoch {row['epoch']} "
            f"by {row['holder']}"
        )


def _check_name(backend: Backend, artifact: str, version: str, step: int) -> None:
    conn = backend.conn()
    overwrite = "version-overwrite" in backend.faults
    if conn.execute(
        "SELECT 1 FROM versions WHERE artifact = ? AND step = ?", (artifact, step)
    ).fetchone():
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
        conn.execute(
            "INSERT INTO uploads (id, artifact, token, epoch, holder, version, step, location, "
            "place, placement, created_at, expires_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                upload_id,
                name,
                tok["token"],
                tok["epoch"],
                tok["holder"],
                version,
                step,
                placement.location.id,
                tok["place"],
                placement.kind,
                iso(now),
                now + backend.settings.upload_lifetime,
            ),
        )
        conn.executemany(
            "INSERT INTO upload_files (upload_id, name, size, sha256) VALUES (?,?,?,?)",
            [(upload_id, n, s, h) for n, s, h in parsed],
        )
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
        up = conn.execute(
            "SELECT * FROM uploads WHERE id = ? AND artifact = ?", (upload, name)
        ).fetchone()
        if up is None:
            raise NotFound(f"upload {upload} does not exist for {name}")
        # An upload belongs to the token that started it: a newer token cannot launder it.
        if "open-not-atomic" not in backend.faults:
            _check_epoch(backend, name, min(up["epoch"], tok["epoch"]), "commit")
        if up["state"] == "committed":
            raise VersionExists(f"{name}/{up['version']} is already committed")
        require_committable(backend, up)
        _check_name(backend, name, up["version"], up["step"])
        files = conn.execute(
            "SELECT * FROM upload_files WHERE upload_id = ? ORDER BY name", (upload,)
        ).fetchall()
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
    row = conn.execute(
        "SELECT * FROM versions WHERE artifact = ? AND step = ?", (name, up["step"])
    ).fetchone()
    return version_json(backend, row, place_from_text(tok["place"]))


def _insert_version(
    conn: sqlite3.Connection, up: sqlite3.Row, files: list[sqlite3.Row], now: float
) -> None:
    artifact, step = up["artifact"], up["step"]
    replaced = conn.execute(
        "DELETE FROM versions WHERE artifact = ? AND step = ?", (artifact, step)
    ).rowcount
    conn.execute("DELETE FROM version_files WHERE artifact = ? AND step = ?", (artifact, step))
    conn.execute(
        "INSERT INTO versions (artifact, step, version, location, size, created_at, epoch, "
        "holder, place, placement, upload_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            artifact,
            step,
            up["version"],
            up["location"],
            sum(f["size"] for f in files),
            iso(now),
            up["epoch"],
            up["holder"],
            up["place"],
            up["placement"],
            up["id"],
        ),
    )
    conn.executemany(
        "INSERT INTO version_files (artifact, step, name, size, sha256, object_key) "
        "VALUES (?,?,?,?,?,?)",
        [(artifact, step, f["name"], f["size"], f["sha256"], f["object_key"]) for f in files],
    )
    conn.execute("UPDATE uploads SET state = 'committed' WHERE id = ?", (up["id"],))
    conn.execute(
        "UPDATE artifacts SET versions = versions + ? WHERE name = ?",
        (0 if replaced else 1, artifact),
    )


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
            _require_artifact(backend, name)
            raise NotFound(f"{name} has no committed version")
    else:
        step = names.version_step(version)
    row = (
        backend.conn()
        .execute("SELECT * FROM versions WHERE artifact = ? AND step = ?", (name, step))
        .fetchone()
    )
    if row is None:
        _require_artifact(backend, name)
        raise NotFound(f"{name} has no version {version}")
    return version_json(backend, row, place, base_url=base_url)


def list_versions(backend: Backend, who: Principal, artifact: object, place: Place | None) -> dict:
    name = names.artifact_name(artifact)
    who.require("read", name)
    _require_artifact(backend, name)
    rows = (
        backend.conn()
        .execute("SELECT * FROM versions WHERE artifact = ? ORDER BY step", (name,))
        .fetchall()
    )
    return {"versions": [version_json(backend, r, place, files=False) for r in rows]}


def _require_artifact(backend: Backend, name: str) -> None:
    if backend.conn().execute("SELECT 1 FROM artifacts WHERE name = ?", (name,)).fetchone() is None:
        raise NotFound(f"artifact {name} does not exist")
