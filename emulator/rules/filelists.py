"""The file lists of writes and commits (VER-1, VER-4, VER-5, VER-6).

A write declares files either with their size and sha256, or by name alone: a streamed file,
whose size and sha256 are known only once its PUT has been received. The commit names each
streamed file with what its writer wrote, and may repeat declared files with their declared
values; the version records what the PUTs received, which the checks below make equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import names
from ..core.errors import Incomplete, InvalidArgument, PayloadTooLarge

Row = Mapping[str, Any]

#: `upload_files.size` of a streamed file (declared by name alone); its sha256 is "".
STREAMED = -1


@dataclass(frozen=True)
class Declared:
    name: str
    size: int  # STREAMED for a file declared by name alone
    sha256: str

    @property
    def streamed(self) -> bool:
        return self.size == STREAMED


def _too_many(max_files: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"at most {max_files} file{'' if max_files == 1 else 's'} per version")


def parse_write(files: object, max_files: int, max_file_size: int) -> list[Declared]:
    """A write's `files`: each `{name, size, sha256}` or `{name}`, no name twice."""
    if not isinstance(files, list):
        raise InvalidArgument("files must be a list of {name, size, sha256} or {name}")
    if len(files) > max_files:
        raise _too_many(max_files)
    out: list[Declared] = []
    seen: set[str] = set()
    for f in files:
        if not isinstance(f, dict) or "name" not in f or not (
            set(f) == {"name"} or set(f) == {"name", "size", "sha256"}
        ):
            raise InvalidArgument(
                "each file is {name, size, sha256}, or {name} alone for a streamed file"
            )
        name = names.file_name(f["name"])
        if name in seen:
            raise InvalidArgument(f"file {name!r} is listed twice")
        seen.add(name)
        if len(f) == 1:
            out.append(Declared(name, STREAMED, ""))
            continue
        size = names.size(f.get("size"))
        sha = names.sha256_hex(f.get("sha256"))
        if size > max_file_size:
            raise PayloadTooLarge(f"{name} declares {size} bytes; the limit is {max_file_size}")
        out.append(Declared(name, size, sha))
    return out


def check_joined(new: Sequence[Declared], earlier: Iterable[str], max_files: int) -> None:
    """New files joining an upload (VER-5): no name the upload already has, and no file
    that is also a folder of another file's path, across every write into it."""
    before = set(earlier)
    twice = sorted(before.intersection(d.name for d in new))
    if twice:
        raise InvalidArgument(
            f"file {twice[0]!r} is already declared in this upload; a name is declared once")
    every = before | {d.name for d in new}
    if len(every) > max_files:
        raise _too_many(max_files)
    # Collecting every folder once is linear in the names' total length (10,000 names:
    # milliseconds, not seconds).
    folders = {name[:i] for name in every for i, ch in enumerate(name) if ch == "/"}
    clash = every & folders
    if clash:
        raise InvalidArgument(f"file {min(clash)!r} is also a folder of another file")


def parse_commit(files: object) -> dict[str, tuple[int, str]]:
    """A commit's `files`: `{name, size, sha256}` each, no name twice; absent is empty."""
    if files is None:
        return {}
    if not isinstance(files, list):
        raise InvalidArgument("files must be a list of {name, size, sha256}")
    listed: dict[str, tuple[int, str]] = {}
    for f in files:
        if not isinstance(f, dict) or set(f) != {"name", "size", "sha256"}:
            raise InvalidArgument("each listed file is {name, size, sha256} and nothing else")
        name = names.file_name(f["name"])
        if name in listed:
            raise InvalidArgument(f"file {name!r} is listed twice")
        listed[name] = (names.size(f["size"]), names.sha256_hex(f["sha256"]))
    return listed


def check_listed_names(listed: dict[str, tuple[int, str]], files: Sequence[Row]) -> None:
    """400 for a listed name that is not a file of the upload (before any 404 or 409)."""
    known = {f["name"] for f in files}
    stray = sorted(set(listed) - known)
    if stray:
        raise InvalidArgument(
            f"file {stray[0]!r} is not a file of this upload; list only files it declared")


def check_complete(listed: dict[str, tuple[int, str]], files: Sequence[Row]) -> None:
    """409 `incomplete` unless every file arrived as declared, and every streamed file is
    listed with the size and sha256 its PUT received (VER-4, VER-6)."""
    wrong = []
    for f in files:
        got = (f["received_size"], f["received_sha256"])
        said = listed.get(f["name"])
        if f["size"] == STREAMED:
            ok = got[0] is not None and said == got
        else:
            ok = got == (f["size"], f["sha256"]) and (said is None or said == got)
        if not ok:
            wrong.append(f["name"])
    if wrong:
        raise Incomplete(
            f"{len(wrong)} file(s) not uploaded as declared, or (streamed) not listed with the "
            "size and sha256 their PUT answered: " + ", ".join(wrong[:10]))


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def received(f: Row) -> tuple[int, str]:
    """What a committed file records: the bytes its PUT received (equal to the declared
    values once `check_complete` passed; the declared ones where a fault skipped it)."""
    if f["received_size"] is not None:
        return f["received_size"], f["received_sha256"]
    if f["size"] == STREAMED:
        return 0, EMPTY_SHA256
    return f["size"], f["sha256"]
