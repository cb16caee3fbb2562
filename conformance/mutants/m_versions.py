"""Mutants of VER-2 and VER-3: an existing version reported as out of order or rewritten
"fine", committed bytes that change after the commit, a step reported as existing, one
below the latest taken then lost, step 0 malformed, a fork's source step taken as the
floor. One row each (rows.py); the two that serve bytes of their own are watched rows,
which read the signed URLs handed out (reads.py) and the uploads' book (m_uploads.booked)."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.base import api_request
from conformance.mutants.base import error_code
from conformance.mutants.m_read import bytes_reply
from conformance.mutants.m_read import obj
from conformance.mutants.m_read import parse_range
from conformance.mutants.m_read import resend
from conformance.mutants.m_retention import step_of
from conformance.mutants.m_uploads import booked
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import refused_when
from conformance.mutants.rows import rows
from conformance.mutants.tracking import api_get
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of

__all__ = ["last_put_served", "listed", "newest_same_file"]

Json = dict[str, Any]
WRITE, COMMIT = ("versions/write",), ("versions/commit",)
#: Every exchange: the watched rows keep their book (m_uploads.booked) from all of them.
ALL = On(kind="any", replies="any")


def listed(turn: Turn, artifact: object) -> list[Json]:
    """The committed versions of ``artifact`` as the request's own key lists them."""
    reply = turn.upstream.send(api_request("GET", "versions/list",
                                           turn.request.header("Authorization"),
                                           (("artifact", str(artifact)),)))
    data = reply.json() if reply.ok else None
    return list(data.get("versions") or []) if isinstance(data, dict) else []


def last_put_served(turn: Turn) -> Response | None:
    """A GET or HEAD of a committed file answered with the bytes last PUT for its name by
    an upload of the same version not committed, when the size is the same."""
    request = turn.request
    info = turn.seen.info(request) if turn.seen and request.kind == "data" else None
    if not info or info["method"] != "GET" or request.method not in ("GET", "HEAD"):
        return None
    with turn.lock:
        upload, data = turn.memory.get("last_put", {}).get(
            (info["artifact"], info["version"], info["name"]), (None, None))
        done = set(turn.memory.get("committed", set()))
    if data is None or upload in done or len(data) != info["size"]:
        return None
    span = parse_range(request.header("Range"), len(data))
    if span is None:
        return None
    head = request.method == "HEAD"
    if span == "none":
        return bytes_reply(data, len(data), None, head)
    return bytes_reply(data[span[0]:span[1] + 1], len(data), span, head)


def newest_same_file(turn: Turn) -> Response | None:
    """Once an artifact has 3 or more versions, a GET of an older version's file sent to
    the newest version's file of the same name and size (a cache keyed by file name)."""
    request = turn.request
    info = turn.seen.info(request) if turn.seen and request.kind == "data" else None
    if not info or info["method"] != "GET":
        return None
    same = turn.seen.known(method="GET", artifact=info["artifact"])
    versions = sorted({i["version"] for i in same if isinstance(i["version"], str)})
    newer = [i for i in same if i["name"] == info["name"] and i["size"] == info["size"]
             and isinstance(i["version"], str) and i["version"] > info["version"]]
    if len(versions) < 3 or not newer:
        return None
    best = max(newer, key=lambda i: i["version"])
    return turn.upstream.send(resend(request, best["url"]))


# --- VER-2.a ---------------------------------------------------------------------------


def _exists_not_latest(turn: Turn) -> bool:
    versions = listed(turn, body_of(turn.request).get("artifact", ""))
    return len(versions) >= 3 and versions[-1]["version"] != body_of(turn.request).get("version")


def _identical_files_read(reply: Response, turn: Turn) -> Response:
    """A commit refused version_exists answered with the committed Version when the
    upload declared the very same files."""
    with turn.lock:
        up = turn.t.uploads.get(str(body_of(turn.request).get("upload")))
    if up is None:
        return reply
    read = turn.upstream.send(api_request(
        "GET", "versions/read", turn.request.header("Authorization"),
        (("artifact", up.artifact), ("version", str(up.write.get("version"))))))
    have = {(f["name"], f["size"], f["sha256"]) for f in obj(read).get("files", [])}
    want = {(f.get("name"), f.get("size"), f.get("sha256")) for f in up.write.get("files") or []}
    return read if read.ok and have == want else reply


def _committed_by_another_token(reply: Response, turn: Turn) -> Response:
    """Commits are noted with their token; a version_exists for a version another token
    committed answers not_after_latest."""
    sent = body_of(turn.request)
    with turn.lock:
        by = turn.memory.setdefault("by", {})
        if turn.request.endpoint == "versions/commit" and reply.ok:
            answer = reply.json()
            if isinstance(answer, dict):
                by[(answer.get("artifact"), answer.get("version"))] = sent.get("token")
            return reply
        if error_code(reply) != "version_exists":
            return reply
        version = sent.get("version")
        if turn.request.endpoint == "versions/commit":
            up = turn.t.uploads.get(sent.get("upload"))
            version = up.write.get("version") if up else None
        first = by.get((sent.get("artifact"), version))
    if first and first != sent.get("token"):
        return Response.error(409, "not_after_latest", "the step is not after the latest")
    return reply


def _again_as_read(reply: Response, turn: Turn) -> Response:
    """Commits are noted with the version they made; a second commit of the same upload,
    refused version_exists, answers that version as read."""
    sent = body_of(turn.request)
    key = (sent.get("artifact"), sent.get("upload"))
    with turn.lock:
        done = turn.memory.setdefault("done", {})
        if reply.ok:
            done[key] = (reply.json() or {}).get("version")
            return reply
        version = done.get(key) if error_code(reply) == "version_exists" else None
    if not version:
        return reply
    again = api_get(turn.upstream, "versions/read", key_of(turn.request),
                    artifact=str(sent.get("artifact")), version=str(version))
    return again if again.ok else reply


def _upper_sha_of_older_epochs(reply: Response, turn: Turn) -> Response:
    version = reply.json()
    with turn.lock:
        opens = turn.t.opens.get(str(version.get("artifact")), [])
        newest = opens[-1].epoch if opens else None
    if newest is None or not isinstance(version.get("epoch"), int) or version["epoch"] >= newest:
        return reply
    files = [dict(f, sha256=f["sha256"].upper()) if isinstance(f.get("sha256"), str) else f
             for f in version.get("files") or []]
    return reply.with_json(dict(version, files=files))


# --- VER-3.a ---------------------------------------------------------------------------

SHADOW = "step-99999999"


def _shadow_commit(turn: Turn) -> Response | None:
    if turn.request.endpoint != "versions/commit":
        return None
    with turn.lock:
        fake = turn.memory.get("shadows", {}).get(body_of(turn.request).get("upload"))
    return None if fake is None else Response(
        200, (("Content-Type", "application/json"),)).with_json(fake)


def _one_below_shadowed(reply: Response, turn: Turn) -> Response:
    """A write one step below the latest, refused not_after_latest, is written under
    another name; its commit will answer a Version and commit nothing."""
    sent = body_of(turn.request)
    step = step_of(sent.get("version"))
    if turn.request.endpoint != "versions/write" or error_code(reply) != "not_after_latest" \
            or step is None:
        return reply
    versions = listed(turn, sent.get("artifact", ""))
    if not versions or versions[-1]["step"] != step + 1:
        return reply
    shadow = turn.upstream.send(turn.request.with_json({**sent, "version": SHADOW}))
    if not shadow.ok:
        return reply
    files = [{k: f.get(k) for k in ("name", "size", "sha256")}
             for f in sent.get("files") or [] if isinstance(f, dict)]
    fake = {**versions[-1], "version": sent["version"], "step": step,
            "files": files, "size": sum(int(f["size"] or 0) for f in files)}
    with turn.lock:
        turn.memory.setdefault("shadows", {})[obj(shadow).get("upload")] = fake
    return shadow


def _below_the_fork_source(turn: Turn) -> Response | None:
    sent = body_of(turn.request)
    step, art = step_of(sent.get("version")), sent.get("artifact")
    if turn.request.method != "POST" or step is None:
        return None
    with turn.lock:
        forks = [o.resume for o in turn.t.opens.get(str(art), [])
                 if isinstance(o.resume, str) and o.resume.startswith("o41://")]
    floor = step_of(forks[-1].rsplit("/", 1)[-1]) if forks else None
    if floor is None or step > floor or versions_of(turn.upstream, key_of(turn.request),
                                                     str(art)):
        return None
    return Response.error(409, "not_after_latest", "the step is not after the fork's")


rows(
    Row("ver-exists-reported-as-not-after-latest-when-3-versions", "VER-2.a",
        "an existing non-latest name, with 3+ versions, answers not_after_latest",
        On(WRITE, replies="error", code="version_exists"),
        answer=refused_when(_exists_not_latest, 409, "not_after_latest",
                            "the step is not after the latest")),
    Row("ver-exists-identical-second-upload-commits", "VER-2.a",
        "committing a second upload of a committed name with identical files gives 200",
        On(COMMIT, replies="error", code="version_exists"), answer=_identical_files_read,
        tracked=True),
    Row("ver-exists-of-latest-after-relaunch-reported-as-not-after-latest", "VER-2.a",
        "after a relaunch, writing the latest version's name answers not_after_latest",
        On((*WRITE, *COMMIT), replies="any"), answer=_committed_by_another_token, tracked=True),
    Row("ver-commit-of-a-committed-upload-answers-200", "VER-2.a",
        "a second commit of the same upload answers 200 and the version, not 409",
        On(COMMIT, replies="any"), answer=_again_as_read, tracked=True),
    # Bytes stored per artifact, version and file name: another upload's PUT replaces them.
    Row("ver-immutable-bytes-follow-last-put-of-same-name", "VER-2.b",
        "a committed file serves the bytes last PUT for its name by another upload",
        ALL, serve=last_put_served, answer=booked(lambda reply, turn: reply), watched=True),
    Row("ver-immutable-old-file-served-from-newest-same-name", "VER-2.b",
        "with 3+ versions, an old file serves the newest same-named same-size file",
        On(kind="data", replies="any"), serve=newest_same_file, watched=True),
    Row("ver-immutable-sha256-upper-cased-after-relaunch", "VER-2.b",
        "after a relaunch, older versions report their sha256 in upper case",
        On(("versions/read",)), answer=_upper_sha_of_older_epochs, tracked=True),
    Row("ver-step-older-reported-as-version-exists-when-3-versions", "VER-3.a",
        "a step below the latest, with 3+ versions, answers version_exists",
        On(replies="error", code="not_after_latest"),
        answer=refused_when(lambda turn: len(listed(turn, artifact_of(turn.request) or "")) >= 3,
                            409, "version_exists", "that version is already committed")),
    Row("ver-step-one-below-latest-accepted-then-lost", "VER-3.a",
        "a step exactly one below the latest is accepted, and silently never committed",
        On((*WRITE, *COMMIT), replies="any"), serve=_shadow_commit,
        answer=_one_below_shadowed, tracked=True),
    Row("ver-step-zero-after-versions-gives-400", "VER-3.a",
        "writing step-00000000 on an artifact with versions answers 400, not 409",
        On(WRITE, replies="error", code="not_after_latest",
           when=lambda r: body_of(r).get("version") == "step-00000000"),
        answer=lambda reply, turn: Response.error(400, "invalid_argument",
                                                  "step 0 is not a checkpoint"), tracked=True),
    Row("ver-step-of-a-fork-compared-with-its-source-version", "VER-3.a",
        "a forked artifact's first version at or below the source's step gets 409",
        On(WRITE), serve=_below_the_fork_source, tracked=True),
)
