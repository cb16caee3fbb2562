"""Mutants of OPEN-*: resume latest, the resumed version and its URLs, fresh opens and
their refusals, and an open right in the common case and wrong only for a box without a
place, files declared out of name order, nested file names or a forked artifact. One row
each (rows.py); the bends that remember forks and refusals keep them in the row's memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.open_bends import FRESH
from conformance.mutants.open_bends import LATEST
from conformance.mutants.open_bends import noted_forks
from conformance.mutants.open_bends import refusal_names_holder
from conformance.mutants.open_bends import reopened_for
from conformance.mutants.open_bends import resumed
from conformance.mutants.open_bends import version_read
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import refused_when
from conformance.mutants.rows import rows
from conformance.mutants.tracking import artifact_info
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of
from conformance.mutants.tracking import key_of
from conformance.mutants.tracking import versions_of

Json = dict[str, Any]
OPEN = ("artifacts/open",)


def _info(turn: Turn) -> Json | None:
    return artifact_info(turn.upstream, key_of(turn.request), str(artifact_of(turn.request)))


# --- OPEN-1.a ---------------------------------------------------------------------------


def _new_dotted_404(turn: Turn) -> Response | None:
    art = str(artifact_of(turn.request) or "")
    name = art.split("/")[-1]
    if ("." in name or "_" in name) and _info(turn) is None:
        return Response.error(404, "not_found", f"no artifact {art}")
    return None


def _empty_404(turn: Turn) -> Response | None:
    info = _info(turn)
    if info is not None and not info.get("versions"):
        return Response.error(404, "not_found", "the artifact has no version to resume")
    return None


def _placeless_ghost(reply: Response, turn: Turn) -> Response:
    """A first latest open with place null is noted; artifacts/read of a noted artifact
    without versions answers 404."""
    sent = body_of(turn.request)
    if turn.request.endpoint == "artifacts/open":
        if reply.ok and sent.get("resume") == "latest" and sent.get("place") is None:
            with turn.lock:
                if len(turn.t.opens.get(str(sent.get("artifact")), [])) == 1:
                    turn.memory.setdefault("ghosts", set()).add(sent.get("artifact"))
    return reply


def _ghost_unread(turn: Turn) -> Response | None:
    if turn.request.endpoint != "artifacts/read":
        return None
    art = turn.request.arg("artifact")
    with turn.lock:
        ghost = art in turn.memory.get("ghosts", set())
    if ghost and not versions_of(turn.upstream, key_of(turn.request), str(art)):
        return Response.error(404, "not_found", "no such artifact")
    return None


# --- OPEN-2.a / OPEN-2.b ----------------------------------------------------------------


def _listed(turn: Turn) -> list[Json]:
    return versions_of(turn.upstream, key_of(turn.request), str(turn.request.json()["artifact"]))


def _second_highest(version: Json, turn: Turn) -> Json | None:
    listed = _listed(turn)
    if len(listed) < 3:
        return None
    return version_read(turn, version["artifact"], listed[-2]["version"]) or None


def _last_file_dropped(version: Json, turn: Turn) -> Json | None:
    files = version.get("files") or []
    return {**version, "files": files[:-1]} if len(files) >= 3 else None


def _urls_swapped(version: Json, turn: Turn) -> Json | None:
    files = [dict(f) for f in version.get("files") or []]
    if len(files) < 2 or "url" not in files[0] or "url" not in files[1]:
        return None
    files[0]["url"], files[1]["url"] = files[1]["url"], files[0]["url"]
    return {**version, "files": files}


def _urls_of_previous(version: Json, turn: Turn) -> Json | None:
    listed = _listed(turn)
    if len(listed) < 2:
        return None
    older = version_read(turn, str(body_of(turn.request)["artifact"]), listed[-2]["version"])
    urls = {f["name"]: f.get("url") for f in (older or {}).get("files") or []}
    return {**version, "files": [dict(f, url=urls.get(f["name"]) or f.get("url"))
                                 for f in version.get("files") or []]}


def _sha_in_declared_order(version: Json, turn: Turn) -> Json | None:
    """Files in name order paired with the sha256 of the files in the order declared."""
    files = version.get("files") or []
    with turn.lock:
        ups = [u for u in turn.t.uploads.values() if u.artifact == version.get("artifact")
               and u.write.get("version") == version.get("version")] if files else []
    declared = [f.get("name") for f in (ups[-1].write.get("files") or [])] if ups else []
    by_name = {f.get("name"): f.get("sha256") for f in files}
    if len(files) < 2 or declared == sorted(declared) or set(declared) != set(by_name):
        return None
    files = [dict(f) for f in files]
    for f, name in zip(sorted(files, key=lambda f: str(f.get("name"))), declared, strict=True):
        f["sha256"] = by_name[name]
    return {**version, "files": files}


def _source_of_one_version_fork(reply: Response, turn: Turn) -> Response:
    forks = noted_forks(turn, reply)
    sent = body_of(turn.request)
    src = forks.get(sent.get("artifact"))
    if not (reply.ok and sent.get("resume") == "latest" and src):
        return reply
    if len(versions_of(turn.upstream, key_of(turn.request), str(sent.get("artifact")))) != 1:
        return reply
    version = version_read(turn, *src)
    if not isinstance(version, dict):
        return reply
    return reply.with_json({**reply.json(), "resume_from": {**version,
                                                            "artifact": sent.get("artifact")}})


def _nested_urls_noted(reply: Response, turn: Turn) -> Response:
    if turn.request.endpoint == "artifacts/open" and reply.ok:
        resume = (reply.json() or {}).get("resume_from")
        for f in (resume or {}).get("files") or []:
            if "/" in str(f.get("name")) and f.get("url"):
                with turn.lock:
                    turn.memory.setdefault("nested", set()).add(urlsplit(f["url"]).path)
    return reply


def _nested_url_404(turn: Turn) -> Response | None:
    request = turn.request
    if request.kind == "data" and request.method in ("GET", "HEAD"):
        with turn.lock:
            if request.path in turn.memory.get("nested", set()):
                return Response.error(404, "not_found", "no such file")
    return None


# --- OPEN-3 -----------------------------------------------------------------------------


def _at_least(n: int) -> Callable[[Turn], bool]:
    return lambda turn: len(versions_of(turn.upstream, key_of(turn.request),
                                        str(artifact_of(turn.request)))) >= n


MARK = "X-Mutant-Fresh"


def _fresh_as_latest_at_3(turn: Turn) -> Request | None:
    if turn.request.header(MARK) or not _at_least(3)(turn):
        return None
    return turn.request.with_json(dict(turn.request.json(), resume="latest")).with_header(MARK,
                                                                                          "1")


def _marked_resume_null(reply: Response, turn: Turn) -> Response:
    return reply.with_json({**reply.json(), "resume_from": None}) \
        if turn.request.header(MARK) else reply


def _second_refusal_holder(turn: Turn, current: str) -> str | None:
    art = str(artifact_of(turn.request))
    with turn.lock:
        seen = turn.memory.setdefault("refusals", {})
        seen[art] = seen.get(art, 0) + 1
        if seen[art] < 2:
            return None
    return str(body_of(turn.request).get("holder") or "fresh-box")


def _empty_refused(forked: bool) -> Callable[[Turn], Response | None]:
    def before(turn: Turn) -> Response | None:
        info = _info(turn)
        if info is not None and not info.get("versions") \
                and bool(info.get("forked_from")) == forked:
            return Response.error(409, "has_checkpoints", "the artifact has checkpoints")
        return None

    return before


def fresh_allowed(applies: Callable[[Turn, Response], bool]) -> Bend:
    """A fresh open refused has_checkpoints run as a latest open when ``applies``, and
    answered with ``resume_from: null``."""

    def bend(reply: Response, turn: Turn) -> Response:
        if not (FRESH(turn.request) and error_code(reply) == "has_checkpoints"
                and applies(turn, reply)):
            return reply
        again = turn.upstream.send(turn.request.with_json(dict(body_of(turn.request),
                                                               resume="latest")))
        return again.with_json(dict(again.json(), resume_from=None)) if again.ok else reply

    return bend


def _forked_from_cleared(reply: Response, turn: Turn) -> Response:
    """A refused fresh open is noted; artifacts/read of a noted artifact shows no
    forked_from."""
    request, answer = turn.request, reply.json()
    if request.endpoint == "artifacts/open":
        if FRESH(request) and isinstance(answer, dict) \
                and (answer.get("error") or {}).get("code") == "has_checkpoints":
            with turn.lock:
                turn.memory.setdefault("cleared", set()).add(artifact_of(request))
        return reply
    if not reply.ok or not isinstance(answer, dict) or not isinstance(answer.get("forked_from"),
                                                                     dict):
        return reply
    with turn.lock:
        cleared = answer.get("artifact") in turn.memory.get("cleared", set())
    return reply.with_json(dict(answer, forked_from=None)) if cleared else reply


def _without_resume(request: Request) -> bool:
    sent = body_of(request)
    return request.method == "POST" and bool(sent) and "resume" not in sent \
        and isinstance(sent.get("artifact"), str)


def _fresh_allowed_on_fork(reply: Response, turn: Turn) -> Response:
    """Every open notes the forks; a refused fresh open of a forked artifact is let in."""
    forks = noted_forks(turn, reply)
    return fresh_allowed(lambda turn, reply: artifact_of(turn.request) in forks)(reply, turn)


ANY_OPEN = On(OPEN, replies="any")
OPEN_OR_READ = On((*OPEN, "artifacts/read"), replies="any")


rows(
    Row("open_latest_new_dotted_name_404", "OPEN-1.a",
        "latest on a new artifact whose name has a '.' or '_' is 404 instead of created",
        On(OPEN, when=LATEST), serve=_new_dotted_404, tracked=True),
    Row("open_latest_empty_relaunch_404", "OPEN-1.a",
        "latest on an artifact that exists but has no versions is 404 (nothing to resume)",
        On(OPEN, when=LATEST), serve=_empty_404, tracked=True),
    Row("open_latest_without_place_creates_nothing", "OPEN-1.a",
        "a latest open with place null of a new artifact leaves artifacts/read at 404",
        OPEN_OR_READ, serve=_ghost_unread, answer=_placeless_ghost, tracked=True),
    Row("open_resume_second_highest_at_3_versions", "OPEN-2.a",
        "with 3 or more versions, latest resumes from the second highest step",
        On(OPEN, when=LATEST), answer=resumed(_second_highest), tracked=True),
    Row("open_resume_drops_last_of_3_files", "OPEN-2.a",
        "a resumed version with 3 or more files lists all but the last",
        On(OPEN, when=LATEST), answer=resumed(_last_file_dropped), tracked=True),
    Row("open_resume_sha256_misaligned_for_unsorted_files", "OPEN-2.a",
        "resume_from of files declared out of name order pairs them with others' sha256",
        On(OPEN, when=lambda r: r.method == "POST"), answer=resumed(_sha_in_declared_order),
        tracked=True),
    Row("open_resume_of_fork_with_one_version_gives_source", "OPEN-2.a",
        "latest of a fork with one own version resumes the version it was forked from",
        ANY_OPEN, answer=_source_of_one_version_fork, tracked=True),
    Row("open_resume_urls_swapped_between_files", "OPEN-2.b",
        "resume_from's first two file URLs are swapped",
        On(OPEN, when=LATEST), answer=resumed(_urls_swapped), tracked=True),
    Row("open_resume_urls_of_previous_version", "OPEN-2.b",
        "with 2 or more versions, resume_from's URLs serve the previous version's files",
        On(OPEN, when=LATEST), answer=resumed(_urls_of_previous), tracked=True),
    Row("open_resume_url_of_nested_file_404", "OPEN-2.b",
        "resume_from URLs of files with a '/' in their name answer 404",
        On(kind="any", replies="any"), serve=_nested_url_404, answer=_nested_urls_noted,
        tracked=True),
    Row("open_fresh_refused_not_empty_at_2_versions", "OPEN-3.a",
        "a fresh open on an artifact with 2 or more versions is 409 not_empty",
        On(OPEN, replies="error", code="has_checkpoints", when=FRESH),
        answer=refused_when(_at_least(2), 409, "not_empty", "the artifact is not empty"),
        tracked=True),
    Row("open_fresh_allowed_at_3_versions", "OPEN-3.a",
        "a fresh open on an artifact with 3 or more versions succeeds as latest, resume null",
        On(OPEN, when=lambda r: FRESH(r) or r.header(MARK) is not None),
        serve=_fresh_as_latest_at_3, answer=_marked_resume_null, tracked=True),
    Row("open_fresh_allowed_on_fork_with_own_versions", "OPEN-3.a",
        "a fresh open of a forked artifact that has versions succeeds, resume null",
        ANY_OPEN, answer=_fresh_allowed_on_fork, tracked=True),
    Row("open_fresh_allowed_without_place", "OPEN-3.a",
        "a fresh open with place null on an artifact with versions succeeds",
        ANY_OPEN, answer=fresh_allowed(
            lambda turn, reply: body_of(turn.request).get("place") is None), tracked=True),
    Row("open_fresh_refusal_reopens_for_holder", "OPEN-3.b",
        "a refused fresh open re-opens the artifact for its current holder (epoch rises)",
        On(OPEN, replies="error", code="has_checkpoints", when=FRESH),
        answer=reopened_for(lambda turn, current: current or None), tracked=True),
    Row("open_fresh_second_refusal_takes_over", "OPEN-3.b",
        "the second refused fresh open of an artifact hands it to the refused holder",
        On(OPEN, replies="error", code="has_checkpoints", when=FRESH),
        answer=reopened_for(_second_refusal_holder), tracked=True),
    Row("open-fresh-refusal-records-its-holder", "OPEN-3.b",
        "a fresh open refused 409 has_checkpoints leaves artifacts/read naming its holder",
        OPEN_OR_READ, answer=refusal_names_holder("has_checkpoints"), tracked=True),
    Row("open_fresh_refusal_clears_forked_from", "OPEN-3.b",
        "a refused fresh open of a forked artifact leaves forked_from null",
        OPEN_OR_READ, answer=_forked_from_cleared, tracked=True),
    Row("open_fresh_reopen_of_empty_refused", "OPEN-3.c",
        "a fresh open of an artifact that exists but is empty is 409 has_checkpoints",
        On(OPEN, when=FRESH), serve=_empty_refused(forked=False), tracked=True),
    Row("open_fresh_of_empty_fork_refused", "OPEN-3.c",
        "a fresh open of an empty forked artifact is 409 has_checkpoints (source counted)",
        On(OPEN, when=FRESH), serve=_empty_refused(forked=True), tracked=True),
    Row("open-without-resume-key-resumes-latest", "API-1.f",
        "an open body without resume resumes the latest checkpoint instead of 400",
        On(OPEN, when=_without_resume), ask=lambda r: r.with_json(dict(body_of(r),
                                                                       resume="latest")),
        tracked=True),
)
