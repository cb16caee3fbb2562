"""Deliberate faults, each breaking one contract rule, to prove the conformance suite bites.

Off by default; `o41-emulator serve --fault NAME` turns one on and the server says so loudly.
The rules never ask for a fault by name: `emulator.settings.policy` turns the names into the fields
of one `Policy`, handed to the app, and the rules ask its fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Fault(StrEnum):
    NO_FENCING = "no-fencing"
    STALE_LATEST = "stale-latest"
    FRESH_OVERWRITES = "fresh-overwrites"
    FORK_INTO_NONEMPTY = "fork-into-nonempty"
    OPEN_NOT_ATOMIC = "open-not-atomic"
    WRONG_CROSS_CLOUD = "wrong-cross-cloud"
    NO_KEY_CHECK = "no-key-check"
    RANGE_IGNORED = "range-ignored"
    COMMIT_WITHOUT_FILES = "commit-without-files"
    URL_NEVER_EXPIRES = "url-never-expires"
    FALLBACK_SILENT = "fallback-silent"
    VERSION_OVERWRITE = "version-overwrite"


_BREAKS: dict[Fault, tuple[str, str]] = {
    Fault.NO_FENCING: ("FENCE-2", "writes and commits with an old epoch's token are accepted"),
    Fault.STALE_LATEST: ("READ-1", "version=latest returns the first committed version"),
    Fault.FRESH_OVERWRITES: ("OPEN-3", "a fresh open on an artifact with checkpoints succeeds"),
    Fault.FORK_INTO_NONEMPTY: ("FORK-1", "a fork into an artifact with versions succeeds"),
    Fault.OPEN_NOT_ATOMIC: (
        "FENCE-3",
        "a commit of an older epoch is accepted while its upload predates the open",
    ),
    Fault.WRONG_CROSS_CLOUD: ("XC-1", "cross_cloud is reported inverted"),
    Fault.NO_KEY_CHECK: ("AUTH-1", "calls without a valid key are served"),
    Fault.RANGE_IGNORED: ("READ-3", "Range headers are ignored; the whole file is sent"),
    Fault.COMMIT_WITHOUT_FILES: ("VER-4", "commits succeed without every file uploaded"),
    Fault.URL_NEVER_EXPIRES: ("READ-4", "expired signed URLs are still served"),
    Fault.FALLBACK_SILENT: ("PLACE-3", "fallback placements carry no warning"),
    Fault.VERSION_OVERWRITE: ("VER-2", "committing an existing version name replaces it"),
}
#: Each fault's name, the rule id it breaks and how (printed by `serve`, in docs/emulator.md).
FAULTS: dict[str, tuple[str, str]] = {fault.value: what for fault, what in _BREAKS.items()}


def check_faults(names: Iterable[str]) -> list[str]:
    names = list(names)
    unknown = sorted(set(names) - FAULTS.keys())
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    return names
