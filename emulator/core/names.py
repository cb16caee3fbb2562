"""Parsing and validation of the names the contract uses (VER-1, FORK-1).

Everything a client sends as a name passes through here before it reaches the database or a
storage key, so a bad name is refused with ``invalid_argument`` and never becomes a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidArgument

# Patterns are ASCII classes used with fullmatch: `$` would let a trailing newline through,
# and `\d` would accept other scripts' digits. openapi.py publishes the same patterns.
# A part starts with a letter or digit, as OCI repository and bucket names do: so "-run"
# cannot pass for a command-line flag, and "." and ".." (a path's own names) never match.
SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
VERSION = r"step-([0-9]{8})"
_SEGMENT = re.compile(SEGMENT)
_VERSION = re.compile(VERSION)
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Checked before lower-casing, ASCII only: "\u212a".lower() is "k", and must not pass.
PLACE_PART = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
_PLACE_PART = re.compile(PLACE_PART)
# No control character (C0, DEL, C1 such as U+0085 NEL), line or paragraph separator, or
# bidirectional control (U+202E would show "gpj.exe" as "exe.jpg"), and no backslash.
_FILE_SEGMENT_FORBIDDEN = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\\]")
URI_SCHEME = "o41://"
# Names must be storable on every backend: a folder segment is at most 255 bytes on common
# filesystems, and an S3 key at most 1024 bytes. Objects live at
# `project/name/upload/random/file` (up to 257 + 1 + 27 + 1 + 16 + 1 bytes before the
# file name), so 700 bytes of file name always fit.
MAX_SEGMENT_BYTES = 255
_BAD_SEGMENTS = frozenset(("", ".", ".."))
MAX_FILE_NAME_BYTES = 700


def artifact_name(value: object) -> str:
    """Check an artifact name `project/name`; both parts are safe path segments."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument("artifact must be a string 'project/name'")
    parts = value.split("/")
    if len(parts) != 2 or not all(_SEGMENT.fullmatch(p) for p in parts):
        raise InvalidArgument(
            f"artifact {value[:200]!r} is not 'project/name' (each part 1 to 128 letters, "
            "digits, '.', '_', '-', starting with a letter or digit)"
        )
    return value


def version_step(value: object) -> int:
    """Return the step of a version name `step-` + 8 digits (VER-1)."""
    m = _VERSION.fullmatch(value) if isinstance(value, str) else None
    if not m:
        raise InvalidArgument(f"version {str(value)[:200]!r} is not 'step-' and 8 digits")
    return int(m.group(1))


def version_name(step: int) -> str:
    return f"step-{step:08d}"


def utf8(value: str, what: str) -> bytes:
    """The UTF-8 bytes of a string; one that has none (a lone surrogate, which JSON's
    `\\udc00` escapes can carry) is refused rather than reaching SQLite or a key."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(
            f"{what} {value[:200]!r} is not valid Unicode (a lone surrogate)"
        ) from None


def check_unicode(value: object, where: str = "request body") -> None:
    """Refuse any string, key or value, anywhere in parsed JSON, that is not valid Unicode."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            utf8(item, f"a string in the {where}")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def file_name(value: object) -> str:
    """Check a relative file path with no `.`, `..`, empty or absolute segments (VER-1),
    short enough to be a file path and an object key on every backend."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument("file name must be a non-empty relative path")
    raw = utf8(value, "file name")
    if len(raw) > MAX_FILE_NAME_BYTES:
        raise InvalidArgument(
            f"file name {value[:100]!r}... is {len(raw)} bytes in UTF-8; "
            f"the limit is {MAX_FILE_NAME_BYTES}"
        )
    segments = value.split("/")
    # One regex over the whole name ('/' is not in the class); per segment only set lookups.
    if _FILE_SEGMENT_FORBIDDEN.search(value) or not _BAD_SEGMENTS.isdisjoint(segments):
        raise InvalidArgument(f"file name {value[:200]!r} has an empty, '.', '..' or bad "
                              "segment, or a control character or backslash")
    if len(raw) > MAX_SEGMENT_BYTES:  # else no segment can be longer
        for seg in segments:
            if len(seg.encode("utf-8")) > MAX_SEGMENT_BYTES:
                raise InvalidArgument(
                    f"file name {value[:100]!r}... has a segment of {len(seg.encode('utf-8'))} "
                    f"bytes in UTF-8; the limit is {MAX_SEGMENT_BYTES} per segment"
                )
    return value


def sha256_hex(value: object) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise InvalidArgument("sha256 must be 64 lower-case hex digits")
    return value


def size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument("size must be a non-negative integer")
    return value


@dataclass(frozen=True)
class ForkSource:
    artifact: str
    version: str
    step: int


def fork_uri(value: str) -> ForkSource:
    """Parse `o41://project/name/step-XXXXXXXX` (FORK-1: malformed is 400)."""
    if not value.startswith(URI_SCHEME):
        raise InvalidArgument(
            f"resume {value[:200]!r} is not 'latest', null or 'o41://project/name/step-XXXXXXXX'"
        )
    rest = value[len(URI_SCHEME) :]
    artifact, _, version = rest.rpartition("/")
    return ForkSource(artifact_name(artifact), version, version_step(version))


@dataclass(frozen=True)
class Place:
    """Where a box runs (cloud lower-cased) or where a location sits."""

    cloud: str
    region: str

    def __str__(self) -> str:
        return f"{self.cloud}/{self.region}"

    def json(self) -> dict:
        return {"cloud": self.cloud, "region": self.region}


def place(value: object) -> Place | None:
    """A JSON `place` (an open's body): `{"cloud", "region"}` or null, as the contract types
    it; a string such as "aws/us-east-1" is a mistyped field (API-1: 400)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidArgument("place must be an object {'cloud', 'region'} or null")
    cloud, region = value.get("cloud"), value.get("region")
    if not isinstance(cloud, str) or not isinstance(region, str):
        raise InvalidArgument("place needs string 'cloud' and 'region'")
    return _checked_place(cloud, region)


def place_param(value: str | None) -> Place | None:
    """A `place=cloud/region` query parameter (reads); absent is an unknown place."""
    if value is None:
        return None
    cloud, sep, region = value.partition("/")
    if not sep:
        raise InvalidArgument(f"place {value[:200]!r} is not 'cloud/region'")
    return _checked_place(cloud, region)


def _checked_place(cloud: str, region: str) -> Place:
    """Both parts are safe names; clouds compare case-insensitively."""
    if not _PLACE_PART.fullmatch(cloud) or not _PLACE_PART.fullmatch(region):
        raise InvalidArgument(
            f"place {cloud[:64]!r}/{region[:64]!r} is not letters, digits, '_' and '-'"
        )
    return Place(cloud.lower(), region.lower())
