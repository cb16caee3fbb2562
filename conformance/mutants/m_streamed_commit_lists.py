"""Mutants of a streamed upload's commit list (VER-6.c, VER-6.d): a list that is filled
in, forgiven its wrong values or its foreign names, matched ignoring case, refused 409 for a
name twice or 400 for a declared file, or that spoils its upload when refused. One row
each (rows.py)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import error_code
from conformance.mutants.base import ok_or
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import error
from conformance.mutants.rows import noted
from conformance.mutants.rows import recalled
from conformance.mutants.rows import rows
from conformance.mutants.streamed_files import Json
from conformance.mutants.streamed_files import Listed
from conformance.mutants.streamed_files import listed_files
from conformance.mutants.streamed_files import received
from conformance.mutants.streamed_files import upload_of
from conformance.mutants.tracking import UploadInfo
from conformance.mutants.tracking import body_of

COMMIT = ("versions/commit",)


def commit_list_retried(fix: Callable[[Turn, UploadInfo, Listed], Listed | None]) -> Bend:
    """A refused commit of an upload the proxy saw written is sent again with the list
    ``fix`` makes of its list (None: the refusal stands); that reply if it succeeds."""

    def bend(reply: Response, turn: Turn) -> Response:
        up = upload_of(turn)
        fixed = None if up is None else fix(turn, up, listed_files(turn.request))
        if fixed is None:
            return reply
        return ok_or(turn.upstream,
                     turn.request.with_json({**body_of(turn.request), "files": fixed}), reply)

    return bend


def _filled_in(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    names = {f.get("name") for f in listed}
    extra = [f for f in received(up, turn.lock) if f["name"] not in names]
    return listed + extra if extra else None


def _received_values(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    truth = {f["name"]: f for f in received(up, turn.lock)}
    fixed = [truth.get(f.get("name"), f) for f in listed]
    return fixed if listed and fixed != listed else None


def _without_other_files(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    ours = {f.get("name") for f in up.write.get("files") or []}
    kept = [f for f in listed if f.get("name") in ours]
    return kept if len(kept) != len(listed) else None


def _declared(up: UploadInfo) -> dict[str, Json]:
    """The upload's files declared with a size, by name."""
    return {f["name"]: f for f in up.write.get("files") or []
            if isinstance(f, dict) and "size" in f}


def _declared_values(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    declared = _declared(up)
    fixed = [{"name": f.get("name"), "size": declared[f["name"]]["size"],
              "sha256": declared[f["name"]].get("sha256")}
             if f.get("name") in declared else f for f in listed]
    return None if fixed == listed else fixed


def _names_of_the_upload(turn: Turn, up: UploadInfo, listed: Listed) -> Listed | None:
    ours = {str(f.get("name")).casefold(): f.get("name") for f in up.write.get("files") or []
            if isinstance(f, dict)}
    fixed = [{**f, "name": ours.get(str(f.get("name")).casefold(), f.get("name"))}
             for f in listed]
    names = [f["name"] for f in fixed]
    if fixed == listed or len(set(names)) < len(names) or not set(names) <= set(ours.values()):
        return None
    return fixed


def _named_twice(request: Request) -> bool:
    names = [f.get("name") for f in listed_files(request)]
    return len(set(names)) < len(names)


def _lists_a_declared_file(turn: Turn) -> Response | None:
    """The commit list taken as the list of streamed files."""
    up = upload_of(turn)
    if up is not None and any(f.get("name") in _declared(up) for f in listed_files(turn.request)):
        return Response.error(400, "invalid_argument", "a listed file is not streamed")
    return None


def _spoiled(turn: Turn) -> Response | None:
    if recalled("spoiled", body_of(turn.request).get("upload"), turn):
        return Response.error(409, "incomplete", "the upload was refused before")
    return None


def _spoils(reply: Response, turn: Turn) -> set[Hashable]:
    refused = error_code(reply) == "incomplete" and listed_files(turn.request)
    return {body_of(turn.request).get("upload")} if refused else set()


rows(
    Row("ver-commit-list-missing-a-streamed-file-filled-in", "VER-6.c",
        "a commit that does not list a streamed file takes the bytes it received",
        On(COMMIT, replies="error", code="incomplete"), answer=commit_list_retried(_filled_in),
        tracked=True),
    Row("ver-commit-list-with-wrong-values-takes-the-received-ones", "VER-6.c",
        "a commit listing a streamed file with a wrong size or sha256 succeeds",
        On(COMMIT, replies="error", code="incomplete"),
        answer=commit_list_retried(_received_values), tracked=True),
    Row("ver-upload-refused-for-its-list-never-commits", "VER-6.c",
        "after a commit refused 409 incomplete for its list, every commit is refused",
        On(COMMIT, replies="any"), serve=_spoiled, answer=noted("spoiled", _spoils)),
    Row("ver-commit-listing-a-declared-file-gets-400", "VER-6.c",
        "a commit listing a declared file with its declared values gets 400",
        On(COMMIT, replies="any"), serve=_lists_a_declared_file, tracked=True),
    Row("ver-commit-list-with-wrong-values-of-a-declared-file-accepted", "VER-6.c",
        "a commit listing a declared file with another size or sha256 succeeds",
        On(COMMIT, replies="error", code="incomplete"),
        answer=commit_list_retried(_declared_values), tracked=True),
    # --- VER-6.d
    Row("ver-commit-list-naming-other-files-ignores-them", "VER-6.d",
        "a commit listing a file that is not of the upload succeeds without it",
        On(COMMIT, replies="error", code="invalid_argument"),
        answer=commit_list_retried(_without_other_files), tracked=True),
    Row("ver-commit-list-naming-a-file-twice-gets-409", "VER-6.d",
        "a commit listing one file twice gets 409 incomplete instead of 400",
        On(COMMIT, replies="error", code="invalid_argument", when=_named_twice),
        answer=error(409, "incomplete", "a file is listed twice")),
    Row("ver-commit-list-names-matched-ignoring-case", "VER-6.d",
        "a commit listing 'S.BIN' for the upload's file 's.bin' is accepted",
        On(COMMIT, replies="error", code="invalid_argument"),
        answer=commit_list_retried(_names_of_the_upload), tracked=True),
)
