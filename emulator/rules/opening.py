"""Opening an artifact: resume latest, fresh, or fork; epochs and fencing (OPEN, FORK, FENCE).

An open is one write transaction: it reads the latest version, bumps the epoch and issues
the token together, so no commit of an older epoch can land after it (FENCE-3), and a
refused open rolls back whole (FENCE-4).
"""

from __future__ import annotations

import secrets
import socket

from .. import store
from ..core.errors import HasCheckpoints, InvalidArgument, NotEmpty, NotFound
from ..core.keys import Principal
from ..core.names import artifact_name, fork_uri, version_name
from ..core.names import place as parse_place
from ..core.stored import iso, place_text
from ..state.backend import Backend
from .replies import version_json
from .versions import latest_step


def default_holder() -> str:
    return f"box-{socket.gethostname()}-{secrets.token_hex(3)}"


def open_artifact(
    backend: Backend,
    who: Principal,
    artifact: object,
    resume: object,
    place: object,
    holder: object,
    base_url: str,
) -> dict:
    name = artifact_name(artifact)
    who.require("write", name)  # AUTH-2: checked before anything else about the open
    where = parse_place(place)
    if holder is None:
        holder = default_holder()
    if not isinstance(holder, str) or not holder or len(holder) > 256:
        raise InvalidArgument("holder must be a non-empty string of at most 256 characters")
    fork = None
    if resume is not None and resume != "latest":
        if not isinstance(resume, str):
            raise InvalidArgument("resume must be 'latest', null or an o41:// checkpoint URI")
        fork = fork_uri(resume)
        who.require("read", fork.artifact)
    placement = backend.geography.place_for(where)
    conn = backend.conn()
    now = backend.now()
    with store.transaction(conn):
        # A fork's source is held still too (a delete of the version waits, or went first),
        # and the two rows are locked in name order, so two crossed forks cannot deadlock.
        if fork is not None and fork.artifact < name:
            store.artifacts.hold(conn, fork.artifact)
        # Locked: opens, commits and deletes of one artifact take turns on its row.
        row = store.artifacts.lock(conn, name)
        created = False
        if row is None:
            created = store.artifacts.create(conn, name, holder, iso(now))
            if not created:  # another node's first open came first: this one follows it
                row = store.artifacts.lock(conn, name)
        if fork is not None and fork.artifact > name:
            store.artifacts.hold(conn, fork.artifact)
        has_versions = row is not None and row["versions"] > 0
        resume_row = None
        if fork is not None:
            # A missing source (404) is told before a target with checkpoints (409).
            resume_row = store.versions.row(conn, fork.artifact, fork.step)
            if resume_row is None:
                raise NotFound(f"checkpoint o41://{fork.artifact}/{fork.version} does not exist")
            if has_versions and backend.policy.fork_needs_empty:
                raise NotEmpty(f"{name} has checkpoints; a fork must go to a new, empty artifact")
        elif resume == "latest":
            step = latest_step(backend, name)
            if step is not None:
                resume_row = store.versions.row(conn, name, step)
        elif has_versions and backend.policy.fresh_refused:
            raise HasCheckpoints(
                f"{name} has {row['versions']} checkpoint(s); resume 'latest' or fork to a "
                "new artifact instead of starting fresh"
            )
        fenced = None
        if created:
            epoch = 1
        else:
            epoch = row["epoch"] + 1
            fenced = {"epoch": row["epoch"], "holder": row["holder"]}
            store.artifacts.reopen(conn, name, epoch, holder)
        if fork is not None:
            store.artifacts.record_fork(conn, name, fork.artifact, fork.version)
        token = "tk_" + secrets.token_urlsafe(24)
        store.artifacts.issue_token(conn, token, name, epoch, holder, place_text(where),
                                    iso(now))
        resume_from = (
            version_json(backend, resume_row, where, base_url=base_url, now=now)
            if resume_row is not None
            else None
        )
    warnings = []
    if placement.warning and not (
        placement.kind == "fallback" and not backend.policy.fallback_warns
    ):
        warnings.append(placement.warning)
    return {
        "artifact": name,
        "epoch": epoch,
        "token": token,
        "holder": holder,
        "fenced": fenced,
        "resume_from": resume_from,
        "write_location": {**placement.location.json(), "route": placement.route},
        "warnings": warnings,
    }


def read_artifact(backend: Backend, who: Principal, artifact: object) -> dict:
    name = artifact_name(artifact)
    who.require("read", name)
    with store.snapshot(backend.conn()):  # the count and the latest of one moment
        row = store.artifacts.read(backend.conn(), name)
        if row is None:
            raise NotFound(f"artifact {name} does not exist")
        step = latest_step(backend, name)
    forked = None
    if row["forked_from_artifact"]:
        forked = {"artifact": row["forked_from_artifact"], "version": row["forked_from_version"]}
    return {
        "artifact": name,
        "epoch": row["epoch"],
        "holder": row["holder"],
        "latest": version_name(step) if step is not None else None,
        "versions": row["versions"],
        "forked_from": forked,
        "created_at": row["created_at"],
    }
