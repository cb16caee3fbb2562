"""Mutants of the name grammar (API-1.h: parts that start with punctuation or run past 128
characters taken as names, parts at the bounds refused, names outside the grammar checked
only by the open) and of the spellings the contract pins (API-1.c, API-1.f, API-1.g, VER-1.a:
``LATEST`` taken for ``latest``, a ``resume`` of another type, a stray slash after a name,
reads without ``artifact``, name parts ``.`` and ``..``, a cloud echoed as spelled, a
``place`` given as a string, a commit without ``upload``). One row each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import error
from conformance.mutants.rows import rows
from conformance.mutants.tracking import artifact_of
from conformance.mutants.tracking import body_of

#: Every call that names an artifact, in its body or its query.
NAMING = ("artifacts/open", "versions/write", "versions/commit", "versions/delete",
          "versions/read", "versions/list", "artifacts/read", "usage/read")
READS = ("versions/read", "versions/list", "artifacts/read")
OPEN = ("artifacts/open",)


def _parts(request: Request) -> list[str]:
    """The two parts of the artifact a request names ([] for another shape)."""
    name = artifact_of(request)
    return name.split("/") if isinstance(name, str) and name.count("/") == 1 else []


def _any_part(test: Callable[[str], bool]) -> Callable[[Request], bool]:
    return lambda request: any(test(p) for p in _parts(request))


def _renamed(request: Request, parts: list[str]) -> Request:
    """The request naming ``parts`` joined instead (in its body, else its query)."""
    name = "/".join(parts)
    sent = body_of(request)
    if isinstance(sent.get("artifact"), str):
        return request.with_json({**sent, "artifact": name})
    return request.with_query(artifact=name)


def _punctuation_first(part: str) -> bool:
    return part[:1] in ("._-") and part not in ("", ".", "..")


def _punctuation_run(part: str) -> bool:
    return any(a in "._-" and b in "._-" for a, b in zip(part, part[1:], strict=False))


REFUSED = Response.error(400, "invalid_argument", "the artifact is not a valid name")


def _version_any_case(request: Request) -> bool:
    version = request.arg("version")
    return bool(version) and version != "latest" and str(version).lower() == "latest"


def _resume_any_case(request: Request) -> bool:
    resume = body_of(request).get("resume")
    return isinstance(resume, str) and resume != "latest" and resume.strip().lower() == "latest"


def _resume_of_other_type(request: Request) -> bool:
    sent = body_of(request)
    return "resume" in sent and not isinstance(sent["resume"], str | type(None))


def _as_latest(request: Request) -> Request:
    return request.with_json({**body_of(request), "resume": "latest"})


def _trailing_slash(request: Request) -> bool:
    artifact = request.arg("artifact")
    return bool(artifact) and str(artifact).endswith("/") and str(artifact).count("/") == 2


def _dot_part(request: Request) -> bool:
    name = artifact_of(request)
    return bool(name) and any(part in (".", "..") for part in str(name).split("/"))


def _dots_spelled_out(request: Request) -> Request:
    safe = "/".join({".": "dot", "..": "dot-dot"}.get(p, p)
                    for p in str(artifact_of(request)).split("/"))
    if request.endpoint == "artifacts/open":
        return request.with_json({**body_of(request), "artifact": safe})
    return request.with_query(artifact=safe)


def _cloud_spelled(request: Request) -> str | None:
    """The cloud as the request spells it, when it has capitals."""
    place = body_of(request).get("place") if request.endpoint == "artifacts/open" else None
    spelled = place.get("cloud") if isinstance(place, dict) else None
    if request.endpoint == "versions/read":
        spelled = (request.arg("place") or "").partition("/")[0] or None
    return spelled if isinstance(spelled, str) and spelled != spelled.lower() else None


def _respelled(node: object, spelled: str) -> object:
    if isinstance(node, dict):
        node = {k: _respelled(v, spelled) for k, v in node.items()}
        if node.get("cloud") == spelled.lower() and "region" in node:
            node["cloud"] = spelled
    elif isinstance(node, list):
        node = [_respelled(v, spelled) for v in node]
    return node


def _cloud_echoed(reply: Response, turn: Turn) -> Response:
    spelled = _cloud_spelled(turn.request)
    return reply.with_json(_respelled(reply.json(), spelled)) if spelled else reply


def _newest_ready_upload(turn: Turn) -> Request | None:
    """A commit body without upload given the token's newest fully PUT upload."""
    sent = body_of(turn.request)
    if not sent or sent.get("upload") is not None:
        return None
    with turn.lock:
        ready = [u for u in turn.t.uploads.values() if u.token == sent.get("token")
                 and u.artifact == sent.get("artifact") and u.complete]
    if not ready:
        return None
    newest = max(ready, key=lambda u: u.complete_seq or 0)
    return turn.request.with_json({**sent, "upload": newest.upload})


def _place_as_object(request: Request) -> Request:
    sent = body_of(request)
    place = sent.get("place")
    if isinstance(place, str) and place.count("/") == 1:
        cloud, region = place.split("/")
        return request.with_json({**sent, "place": {"cloud": cloud, "region": region}})
    return request


rows(
    Row("api-name-part-starting-with-dot-underscore-or-dash-accepted", "API-1.h",
        "names whose part starts with '.', '_' or '-' (such as 'p/_run') are accepted",
        On(NAMING, when=_any_part(_punctuation_first)),
        ask=lambda r: _renamed(r, ["x" + p if p[:1] in "._-" else p for p in _parts(r)]),
        tracked=True),
    Row("api-name-part-of-129-characters-accepted", "API-1.h",
        "a name part of 129 or more characters is taken (cut to its first 128)",
        On(NAMING, when=_any_part(lambda p: len(p) > 128)),
        ask=lambda r: _renamed(r, [p[:128] for p in _parts(r)]), tracked=True),
    Row("api-name-part-of-128-characters-refused", "API-1.h",
        "a name part of exactly 128 characters gets 400 (the bound checked with <)",
        On(NAMING, when=_any_part(lambda p: len(p) == 128)), instead=REFUSED, tracked=True),
    Row("api-name-part-of-one-character-refused", "API-1.h",
        "a name part of one character (such as 'p/a') gets 400",
        On(NAMING, when=_any_part(lambda p: len(p) == 1)), instead=REFUSED, tracked=True),
    Row("api-name-part-with-two-punctuation-marks-in-a-row-refused", "API-1.h",
        "a name part with '.-', '_-', '..' or another run of punctuation gets 400",
        On(NAMING, when=_any_part(_punctuation_run)), instead=REFUSED, tracked=True),
    Row("api-name-part-ending-with-punctuation-refused", "API-1.h",
        "a name part that ends with '.', '_' or '-' (such as 'p/run-') gets 400",
        On(NAMING, when=_any_part(lambda p: p[-1:] in ("._-") and p not in ("", ".", ".."))),
        instead=REFUSED, tracked=True),
    Row("api-name-outside-the-grammar-unknown-to-all-but-the-open", "API-1.h",
        "a read, list, write, commit, delete or usage naming '_run' gets 404, not 400",
        On(NAMING[1:], when=_any_part(lambda p: p[:1] in "._-")),
        instead=Response.error(404, "not_found", "no such artifact"), tracked=True),
    Row("ver-read-of-version-LATEST-taken-for-latest", "VER-1.a",
        "versions/read with version=LATEST (or Latest) answers the latest version",
        On(("versions/read",), when=_version_any_case),
        ask=lambda r: r.with_query(version="latest"), tracked=True),
    Row("open-resume-LATEST-taken-for-latest", "API-1.f",
        "an open with resume 'LATEST' (or 'Latest', ' latest') resumes from latest",
        On(OPEN, when=_resume_any_case), ask=_as_latest, tracked=True),
    Row("open-resume-of-another-type-taken-for-latest", "API-1.f",
        "an open whose resume is a number, boolean, list or object resumes from latest",
        On(OPEN, when=_resume_of_other_type), ask=_as_latest, tracked=True),
    Row("api-artifact-name-with-a-trailing-slash-read-as-the-name", "API-1.f",
        "reads of 'project/name/' answer as for 'project/name'",
        On(READS, when=_trailing_slash),
        ask=lambda r: r.with_query(artifact=str(r.arg("artifact")).rstrip("/")), tracked=True),
    Row("api-read-without-artifact-gets-404", "API-1.f",
        "versions/read, versions/list and artifacts/read without artifact answer 404",
        On(READS, replies="error", code="invalid_argument",
           when=lambda r: r.arg("artifact") is None),
        answer=error(404, "not_found", "no such artifact"), tracked=True),
    Row("shape-read-without-urls-parameter-gives-urls", "API-1.c",
        "versions/read with no urls parameter answers as with urls=1",
        On(("versions/read",), when=lambda r: r.arg("urls") is None),
        ask=lambda r: r.with_query(urls="1"), tracked=True),
    Row("api-artifact-name-part-dot-or-dot-dot-accepted", "API-1.f",
        "a name part '.' or '..' (such as 'p/..') is taken as a name of its own",
        On((*OPEN, *READS), when=_dot_part), ask=_dots_spelled_out, tracked=True),
    Row("place-location-cloud-echoed-in-the-box-spelling", "API-1.g",
        "write_location and locations read back say 'GCP' when the box said GCP",
        On(("artifacts/open", "versions/read"), when=lambda r: _cloud_spelled(r) is not None),
        answer=_cloud_echoed, tracked=True),
    Row("api-commit-without-upload-commits-the-newest-upload", "API-1.f",
        "a commit body without upload commits the token's newest fully PUT upload",
        On(("versions/commit",)), serve=_newest_ready_upload, tracked=True),
    Row("api-open-with-string-place-accepted", "API-1.f",
        "an open with place 'cloud/region' (a string, not an object) is accepted",
        On(OPEN), ask=_place_as_object, tracked=True),
)
