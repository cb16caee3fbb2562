"""Mutants of READ-1 and READ-2: which version a read names, and what its URLs serve.

The helpers other modules import from here live in :mod:`conformance.mutants.reads`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import emptied
from conformance.mutants.base import error_code  # noqa: F401  (importable from here too)
from conformance.mutants.reads import MIB  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import Watching  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import api_call  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import bytes_reply  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import committed  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import obj  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import parse_range  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import request_key  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import resend  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import target_artifact  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import unsatisfiable  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import url_key  # noqa: F401  (importable from here as before)
from conformance.mutants.reads import with_headers  # noqa: F401  (importable from here as before)
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import changed
from conformance.mutants.rows import error
from conformance.mutants.rows import rows
from conformance.mutants.tracking import body_of

Json = dict[str, Any]
READ = ("versions/read",)


def _latest(request: Request) -> bool:
    return request.arg("version", "latest") == "latest"


def _first_answer_kept(reply: Response, turn: Turn) -> Response:
    """A latest read with urls=1 cached per artifact and place on first use."""
    key = (turn.request.arg("artifact"), turn.request.arg("place"))
    with turn.lock:
        return turn.memory.setdefault(key, reply)


def _second_highest(reply: Response, turn: Turn) -> Response:
    versions = committed(turn.upstream, turn.request, turn.request.arg("artifact") or "")
    if len(versions) < 3:
        return reply
    return turn.upstream.send(turn.request.with_query(version=versions[-2]["version"]))


def _floor_version(reply: Response, turn: Turn) -> Response:
    wanted = turn.request.arg("version") or ""
    steps = [v["version"] for v in committed(turn.upstream, turn.request,
                                             turn.request.arg("artifact") or "")]
    below = [s for s in steps if s < wanted]
    if below and steps[-1] > wanted:
        return turn.upstream.send(turn.request.with_query(version=below[-1]))
    return reply


def _usage_of_all_emptied(reply: Response, turn: Turn) -> Response:
    return emptied(turn.upstream.send(turn.request.with_query(artifact=None))) or reply


def _read_from_fork_source(reply: Response, turn: Turn) -> Response:
    """Opens of a fork note its source; an unknown version of the fork is read there."""
    request = turn.request
    sent = body_of(request)
    resume = sent.get("resume")
    if request.endpoint == "artifacts/open" and reply.ok and isinstance(resume, str) \
            and resume.startswith("o41://"):
        with turn.lock:
            turn.memory[sent.get("artifact")] = resume[6:].rsplit("/", 1)[0]
    if request.endpoint == "versions/read" and reply.status == 404:
        with turn.lock:
            source = turn.memory.get(request.arg("artifact"))
        if source and not _latest(request):
            moved = turn.upstream.send(request.with_query(artifact=source))
            return moved if moved.ok else reply
    return reply


def _second_file_needs_key(turn: Turn) -> Response | None:
    info = turn.seen.info(turn.request) if turn.seen else None
    if info and info["method"] == "GET" and info["index"] >= 1 \
            and not turn.request.header("Authorization"):
        return Response.error(401, "unauthenticated", "an API key is required")
    return None


def _last_byte_dropped(reply: Response, turn: Turn) -> Response:
    if len(reply.body) > MIB:
        return with_headers(reply.with_body(reply.body[:-1]), Content_Length=None)
    return reply


def _nested_without_url(body: Json, turn: Turn) -> Json | None:
    files = body.get("files") or []
    if not any(isinstance(f, dict) and "/" in str(f.get("name")) and "url" in f
               for f in files):
        return None
    return {**body, "files": [{k: v for k, v in f.items() if k != "url"}
                              if isinstance(f, dict) and "/" in str(f.get("name")) else f
                              for f in files]}


def _unusual_name_not_found(turn: Turn) -> Response | None:
    info = turn.seen.info(turn.request) if turn.seen else None
    name = info.get("name") if info else None
    if info and info["method"] == "GET" and isinstance(name, str) \
            and (" " in name or not name.isascii()):
        return Response.error(404, "not_found", "no such file")
    return None


def _older_epochs_latest_hidden(reply: Response, turn: Turn) -> Response:
    """A read of latest looks among the versions of the newest epoch only."""
    epoch = reply.json().get("epoch")
    with turn.lock:
        newest = turn.t.newest.get(str(turn.request.arg("artifact")))
    if newest is None or not isinstance(epoch, int) or epoch >= newest.epoch:
        return reply
    return Response.error(404, "not_found", "no version yet")


def as_xml(code: str) -> Bend:
    """A data-plane error answered the way an object store answers it: an XML body."""
    xml = (f"<?xml version=\"1.0\"?><Error><Code>{code}</Code>"
           "<Message>Request refused</Message></Error>").encode()

    def bend(reply: Response, turn: Turn) -> Response:
        kept = tuple((k, v) for k, v in reply.headers if k.lower() != "content-type")
        return replace(reply, headers=(*kept, ("Content-Type", "application/xml")), body=xml)

    return bend


rows(
    # --- READ-1.a
    Row("read-latest-stale-for-url-reads", "READ-1.a",
        "latest read with urls=1 keeps answering the version it first answered",
        On(READ, when=lambda r: _latest(r) and r.arg("urls") == "1"),
        answer=_first_answer_kept),
    Row("read-omitted-version-second-highest-when-3-versions", "READ-1.a",
        "read with no version parameter gives the second-highest step once 3 exist",
        On(READ, when=lambda r: r.arg("version") is None), answer=_second_highest),
    Row("read-latest-after-a-relaunch-404-until-the-new-box-commits", "READ-1.a",
        "versions/read of latest answers 404 while the latest is of an older epoch",
        On(READ, when=_latest), answer=_older_epochs_latest_hidden, tracked=True),
    # --- READ-1.b
    Row("read-unknown-gap-step-gives-floor-version", "READ-1.b",
        "unknown step between committed ones reads the committed step below it",
        On(READ, replies=404, when=lambda r: (r.arg("version") or "")[5:].isdigit()),
        answer=_floor_version),
    Row("read-unknown-version-with-urls-gives-403", "READ-1.b",
        "unknown version read with urls=1 answers 403 forbidden instead of 404",
        On(READ, replies=404, when=lambda r: r.arg("urls") == "1" and not _latest(r)),
        answer=error(403, "forbidden", "no URL can be signed for this version")),
    Row("read-usage-of-unknown-artifact-gives-zeros", "READ-1.b",
        "usage/read of a missing artifact answers 200 with zero bytes instead of 404",
        On(("usage/read",), replies=404, when=lambda r: r.arg("artifact") is not None),
        answer=_usage_of_all_emptied),
    Row("read-unknown-version-of-fork-read-from-source", "READ-1.b",
        "unknown version of a forked artifact is read from its fork source",
        On(("artifacts/open", *READ), replies="any"), answer=_read_from_fork_source),
    Row("read-list-of-an-unknown-artifact-gives-an-empty-list", "READ-1.b",
        "versions/list of a missing artifact answers 200 {versions: []} instead of 404",
        On(("versions/list",), replies=404),
        answer=lambda reply, turn: Response(200, (("Content-Type", "application/json"),))
        .with_json({"versions": []})),
    # --- READ-2.a
    Row("read-url-second-file-needs-api-key", "READ-2.a",
        "signed URL of a version's second file is refused without Authorization",
        On(kind="data", replies="any"), serve=_second_file_needs_key, watched=True),
    Row("read-url-plain-get-of-big-file-drops-last-byte", "READ-2.a",
        "an unranged GET of a file over 1 MiB is one byte short",
        On(kind="data", replies=200,
           when=lambda r: r.method == "GET" and not r.header("Range")),
        answer=_last_byte_dropped),
    Row("read-urls-missing-for-nested-file-names", "READ-2.a",
        "urls=1 leaves out the URL of files whose name contains a slash",
        On(READ), answer=changed(_nested_without_url)),
    # The name is decoded twice on the way to the store.
    Row("read-url-of-a-file-name-with-a-space-or-non-ascii-404", "READ-2.a",
        "a plain GET of the URL of 'my file.bin' or 'données.bin' answers 404",
        On(kind="data", replies="any"), serve=_unusual_name_not_found, watched=True),
    # --- API-1.a on the data plane
    Row("api-signed-url-403-answered-in-xml", "API-1.a",
        "a refused signed URL answers 403 with an S3-style XML body, not JSON",
        On(kind="data", replies=403), answer=as_xml("AccessDenied")),
    Row("api-put-413-answered-in-xml", "API-1.a",
        "a PUT over its declared size answers 413 with an S3-style XML body, not JSON",
        On(kind="data", replies=413), answer=as_xml("EntityTooLarge")),
)
