"""Mutants of what a streamed file's PUT answers and of what a Version shows of streamed
files (VER-6.a): a PUT answering nothing, the sha256 of nothing or a nested name's last
segment, a chunked PUT refused with 411, an empty PUT not stored, a Version's size without
its streamed files; and a relaunch's resume_from giving them the declared nothing (OPEN-2.a).
One tracked row each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable

from conformance.mutants.base import Response
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import changed
from conformance.mutants.rows import rows
from conformance.mutants.streamed_files import DATA
from conformance.mutants.streamed_files import EMPTY_SHA256
from conformance.mutants.streamed_files import Json
from conformance.mutants.streamed_files import answered
from conformance.mutants.streamed_files import chunked
from conformance.mutants.streamed_files import noted_then_shown
from conformance.mutants.streamed_files import sha
from conformance.mutants.streamed_files import streamed_put
from conformance.mutants.streamed_files import upload_of


def put_answer(change: Callable[[Json, Turn], Json | None]) -> Bend:
    """A streamed PUT's answer (a JSON object) changed by ``change``."""

    def bend(reply: Response, turn: Turn) -> Response:
        if streamed_put(turn) is None:
            return reply
        new = change(reply.json(), turn)
        return reply if new is None else reply.with_json(new)

    return bend


def _empty_put_not_stored(turn: Turn) -> Response | None:
    """A body of no bytes taken for no body."""
    found = streamed_put(turn)
    if found is None or turn.request.body or turn.request.header("Content-Length") != "0":
        return None
    return answered(found[1], b"")


def _declared_total(data: Json, turn: Turn) -> None:
    up = upload_of(turn)
    if up is not None and any(isinstance(f, dict) and "size" not in f
                              for f in up.write.get("files") or []):
        total = sum(int(f["size"]) for f in up.write.get("files") or []
                    if isinstance(f, dict) and isinstance(f.get("size"), int))
        with turn.lock:
            turn.memory.setdefault("sizes", {})[(data.get("artifact"),
                                                 data.get("version"))] = total


def _with_declared_size(version: Json, turn: Turn) -> Json:
    with turn.lock:
        size = turn.memory.get("sizes", {}).get((version.get("artifact"),
                                                 version.get("version")))
    return version if size is None else {**version, "size": size}


def streamed_names(turn: Turn, artifact: object) -> set[str]:
    """Names declared by name alone in any upload of ``artifact``."""
    with turn.lock:
        return {str(f.get("name")) for up in turn.t.uploads.values() if up.artifact == artifact
                for f in up.write.get("files") or [] if isinstance(f, dict) and "size" not in f}


def _resumed_as_declared(data: Json, turn: Turn) -> Json | None:
    """A resume_from whose streamed files have the size and sha256 they were declared
    with (none: 0 and the sha256 of nothing)."""
    resume = data.get("resume_from")
    if not isinstance(resume, dict):
        return None
    names = streamed_names(turn, resume.get("artifact"))
    files = resume.get("files") or []
    if not any(f.get("name") in names for f in files if isinstance(f, dict)):
        return None
    return {**data, "resume_from": {**resume, "files": [
        {**f, "size": 0, "sha256": EMPTY_SHA256} if f.get("name") in names else f
        for f in files]}}


rows(
    Row("ver-streamed-put-answers-an-empty-body", "VER-6.a",
        "a streamed file's PUT answers 200 with no name, size or sha256",
        On(kind="data"), answer=put_answer(lambda data, turn: {}), tracked=True),
    Row("ver-streamed-put-answers-the-sha256-of-nothing", "VER-6.a",
        "a streamed file's PUT answers the right size and the sha256 of no bytes",
        On(kind="data"), answer=put_answer(lambda data, turn: {**data, "sha256": sha(b"")}),
        tracked=True),
    Row("ver-streamed-put-answers-the-last-segment-of-a-nested-name", "VER-6.a",
        "a streamed PUT of 'opt/state.bin' answers name 'state.bin'",
        On(kind="data"), answer=put_answer(
            lambda data, turn: {**data, "name": data["name"].rsplit("/", 1)[-1]}
            if isinstance(data.get("name"), str) else None), tracked=True),
    Row("ver-chunked-put-refused-with-411", "VER-6.a",
        "a PUT without a Content-Length (chunked) gets 411 Length Required",
        On(kind="data", when=lambda r: r.method == "PUT" and chunked(r)),
        instead=Response.error(411, "length_required", "a PUT needs a Content-Length")),
    Row("ver-streamed-put-of-no-bytes-with-a-length-not-stored", "VER-6.a",
        "a streamed file's PUT with Content-Length: 0 answers 200 and stores nothing",
        DATA, serve=_empty_put_not_stored, tracked=True),
    # Sizes summed from those declared at write time; the files' own entries are right.
    Row("ver-version-size-leaves-out-streamed-files", "VER-6.a",
        "a Version's size is the sum of its declared files only, not its streamed ones",
        On(replies="any"), answer=noted_then_shown(_declared_total, _with_declared_size),
        tracked=True),
    Row("open-resume-from-gives-streamed-files-their-declared-nothing", "OPEN-2.a",
        "resume_from lists a streamed file with size 0 and the sha256 of no bytes",
        On(("artifacts/open",)), answer=changed(_resumed_as_declared), tracked=True),
)
