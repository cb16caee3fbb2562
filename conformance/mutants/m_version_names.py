"""Mutants of VER-1: version names (a trailing newline, nine digits, non-ASCII digits, an
underscore or a space among the digits, an upper-case prefix, a malformed read), file names
(a leading ``./``, a trailing ``/``, checked on the first file, the first three segments,
a sized write only or a starting write only) and names declared twice (twins, the last
kept, sized and streamed, differing in case). One row each (rows.py).

A row that lets a refused name through hands the upstream a safe spelling of it and
translates replies back, so the client sees its own name accepted and all else intact."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.m_error_order import unknown_to_the_key
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import rows
from conformance.mutants.tracking import body_of

__all__ = ["decode_names", "decoded", "encode_name", "safe_segments"]

Json = dict[str, Any]
_NAME = re.compile(r"step-[0-9]{8}")
_CODED = "mx-"
WRITE = ("versions/write",)


def safe_segments(name: str) -> bool:
    return bool(name) and all(s not in ("", ".", "..") for s in name.split("/"))


def encode_name(name: str) -> str:
    """A safe stand-in for a file name the upstream would refuse (decoded in replies)."""
    return _CODED + name.encode().hex()


def decode_names(value: Any) -> Any:
    """Every file ``name`` encoded by :func:`encode_name`, back to what the client sent."""
    if isinstance(value, list):
        return [decode_names(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: decode_names(v) for k, v in value.items()}
    name = out.get("name")
    if isinstance(name, str) and name.startswith(_CODED):
        try:
            out["name"] = bytes.fromhex(name[len(_CODED):]).decode()
        except ValueError:
            pass
    return out


def decoded(resp: Response) -> Response:
    body = resp.json()
    return resp.with_json(decode_names(body)) if isinstance(body, (dict, list)) else resp


def _decoded(reply: Response, turn: Turn) -> Response:
    return decoded(reply)


# --- version names ------------------------------------------------------------------------


def version_fixed(fix: Callable[[str], str | None]) -> Callable[[Request], Request]:
    """A write of a malformed version name that ``fix`` turns into a valid one, written
    under it."""

    def ask(request: Request) -> Request:
        sent = body_of(request)
        version = sent.get("version")
        if request.method != "POST" or not isinstance(version, str) or _NAME.fullmatch(version):
            return request
        fixed = fix(version)
        return request.with_json({**sent, "version": fixed}) \
            if fixed and _NAME.fullmatch(fixed) else request

    return ask


def _nine_digits(version: str) -> str | None:
    return "step-" + version[6:] if re.fullmatch(r"step-0[0-9]{8}", version) else None


def _any_script_digits(version: str) -> str | None:
    digits = version[5:]
    if version.startswith("step-") and len(digits) == 8 and digits.isdecimal():
        return f"step-{int(digits):08d}"
    return None


def _int_parsed(version: str) -> str | None:
    digits = version[5:]
    if not version.startswith("step-") or len(digits) != 8 or not any(c in digits for c in "_ "):
        return None
    try:
        step = int(digits)
    except ValueError:
        return None
    return f"step-{step:08d}" if step >= 0 else None


def _upper_prefix(version: str) -> str | None:
    if version[:5].lower() == "step-" and version[:5] != "step-" and len(version) == 13 \
            and version[5:].isascii() and version[5:].isdigit():
        return "step-" + version[5:]
    return None


def _malformed_read(request: Request) -> bool:
    version = request.arg("version")
    return version not in (None, "latest") and not _NAME.fullmatch(version or "")


def _missing_artifact(turn: Turn) -> bool:
    return unknown_to_the_key(turn, turn.request.arg("artifact"))


# --- file names ---------------------------------------------------------------------------

Allows = Callable[[Json, int, Json], bool]


def names_let_through(allows: Allows) -> Callable[[Request], Request]:
    """A write whose unsafe file names ``allows`` (the body, the file's index, the file)
    lets through, with those names hidden from the upstream behind a safe spelling."""

    def ask(request: Request) -> Request:
        sent = request.json()
        if request.endpoint != "versions/write" or not isinstance(sent, dict) \
                or not isinstance(sent.get("files"), list):
            return request
        files = [dict(f) if isinstance(f, dict) else f for f in sent["files"]]
        changed = False
        for i, f in enumerate(files):
            name = f.get("name") if isinstance(f, dict) else None
            if isinstance(name, str) and not safe_segments(name) and allows(sent, i, f):
                f["name"], changed = encode_name(name), True
        return request.with_json({**sent, "files": files}) if changed else request

    return ask


def _leading_dot(sent: Json, index: int, spec: Json) -> bool:
    name = spec["name"]
    return name.startswith("./") and safe_segments(name[2:])


def _trailing_slash(sent: Json, index: int, spec: Json) -> bool:
    name = spec["name"]
    return name.endswith("/") and safe_segments(name[:-1])


def _past_the_third(sent: Json, index: int, spec: Json) -> bool:
    parts = spec["name"].split("/")
    return len(parts) >= 4 and safe_segments("/".join(parts[:3]))


# --- names declared twice -----------------------------------------------------------------


def _files(request: Request) -> list[Json] | None:
    files = body_of(request).get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        return None
    return files


def _twins(request: Request) -> bool:
    files = _files(request) or []
    seen = [(f.get("size"), f.get("sha256")) for f in files]
    return len(set(seen)) < len(seen) and len({f.get("name") for f in files}) == len(seen)


def _last_kept(request: Request) -> Request:
    files = _files(request)
    if not files:
        return request
    last = {f.get("name"): f for f in files if isinstance(f.get("name"), str)}
    if len(last) == len(files) or len(last) != len({f.get("name") for f in files}):
        return request
    return request.with_json({**body_of(request), "files": list(last.values())})


def _streamed_twin_dropped(request: Request) -> Request:
    files = body_of(request).get("files")
    if request.method != "POST" or not isinstance(files, list):
        return request
    sized = {f.get("name") for f in files if isinstance(f, dict) and "size" in f}
    kept = [f for f in files if not (isinstance(f, dict) and "size" not in f
                                     and f.get("name") in sized)]
    return request if len(kept) == len(files) else request.with_json({**body_of(request),
                                                                      "files": kept})


def _same_but_for_case(request: Request) -> bool:
    names = [f.get("name") for f in body_of(request).get("files") or [] if isinstance(f, dict)]
    return all(isinstance(n, str) for n in names) and len(set(names)) == len(names) \
        and len({n.lower() for n in names}) < len(names)


def _refused(message: str) -> Response:
    return Response.error(400, "invalid_argument", message)


ANY_API = On(replies="any")

rows(
    Row("ver-name-trailing-newline-accepted", "VER-1.a",
        "a version name with a trailing newline is written as the name without it",
        On(WRITE), ask=version_fixed(lambda v: v[:-1] if v.endswith("\n") else None)),
    Row("ver-name-nine-digits-with-leading-zero-accepted", "VER-1.a",
        "step- with 9 digits starting with 0 is accepted as the 8-digit name",
        On(WRITE), ask=version_fixed(_nine_digits)),
    Row("ver-name-non-ascii-digits-accepted", "VER-1.a",
        "step- and 8 non-ASCII decimal digits is accepted",
        On(WRITE), ask=version_fixed(_any_script_digits)),
    Row("ver-name-with-an-underscore-or-space-among-the-digits-accepted", "VER-1.a",
        "step-0000_001 or step- 0000001 is accepted as step-00000001",
        On(WRITE), ask=version_fixed(_int_parsed)),
    Row("ver-name-upper-case-prefix-accepted", "VER-1.a",
        "a write of 'STEP-' or 'Step-' and 8 digits is accepted as step-",
        On(WRITE), ask=version_fixed(_upper_prefix), tracked=True),
    Row("ver-name-malformed-read-gives-404", "VER-1.a",
        "versions/read with a malformed version name answers 404 not_found",
        On(("versions/read",), replies=400, when=_malformed_read),
        answer=lambda reply, turn: Response.error(
            404, "not_found", f"no version {turn.request.arg('version')}")),
    Row("read-malformed-version-of-an-unknown-artifact-gets-404", "VER-1.a",
        "versions/read of a malformed version of a missing artifact gets 404, not 400",
        On(("versions/read",), replies="error", code="invalid_argument"),
        answer=lambda reply, turn: Response.error(404, "not_found", "no such artifact")
        if _missing_artifact(turn) else reply, tracked=True),
    Row("ver-file-name-leading-dot-segment-accepted", "VER-1.b",
        "a file name starting with ./ is accepted",
        ANY_API, ask=names_let_through(_leading_dot), answer=_decoded),
    Row("ver-file-name-trailing-slash-accepted", "VER-1.b",
        "a file name ending with / is accepted",
        ANY_API, ask=names_let_through(_trailing_slash), answer=_decoded),
    Row("ver-file-name-checked-on-first-file-only", "VER-1.b",
        "an unsafe file name is accepted when it is not the first file of the write",
        ANY_API, ask=names_let_through(lambda sent, index, spec: index >= 1), answer=_decoded),
    Row("ver-file-name-segments-past-the-third-unchecked", "VER-1.b",
        "a '.', '..' or empty segment after the third segment of a file name is accepted",
        ANY_API, ask=names_let_through(_past_the_third), answer=_decoded),
    Row("ver-file-name-of-a-streamed-file-unchecked", "VER-1.b",
        "a '..', '.', empty or absolute segment in a streamed file's name is accepted",
        ANY_API, ask=names_let_through(
            lambda sent, index, spec: "size" not in spec and "sha256" not in spec),
        answer=_decoded),
    Row("ver-file-name-in-a-joining-write-unchecked", "VER-1.b",
        "a write naming an upload accepts file names with '..', '.' or empty segments",
        ANY_API, ask=names_let_through(lambda sent, index, spec: sent.get("upload") is not None),
        answer=_decoded),
    Row("ver-write-of-two-names-with-same-content-refused", "VER-1.c",
        "a write declaring two names with the same size and sha256 answers 400",
        On(WRITE, when=_twins), instead=_refused("two files with the same content"),
        tracked=True),
    Row("ver-write-of-one-name-twice-keeps-the-last", "VER-1.c",
        "a write declaring one file name twice is accepted, the last declaration kept",
        On(WRITE), ask=_last_kept, tracked=True),
    Row("ver-write-of-a-name-sized-and-streamed-accepted", "VER-1.c",
        "a write declaring one name with a size and again by name alone is accepted",
        On(WRITE), ask=_streamed_twin_dropped),
    Row("ver-write-of-names-differing-only-in-case-refused", "VER-1.c",
        "a write declaring 'Model.pt' and 'model.pt' answers 400 (names folded to lower case)",
        On(WRITE, when=_same_but_for_case), instead=_refused("a file name is listed twice"),
        tracked=True),
)
