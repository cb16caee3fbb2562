"""Deliberate faults, each breaking one contract rule, to prove the conformance suite bites.

Off by default; `o41-emulator serve --fault NAME` turns one on and the server says so loudly.
The rules code asks `settings.faults` at the one place each rule is enforced.
"""

from __future__ import annotations

FAULTS: dict[str, tuple[str, str]] = {
    "no-fencing": ("FENCE-2", "writes and commits with an old epoch's token are accepted"),
    "stale-latest": ("READ-1", "version=latest returns the first committed version"),
    "fresh-overwrites": ("OPEN-3", "a fresh open on an artifact with checkpoints succeeds"),
    "fork-into-nonempty": ("FORK-1", "a fork into an artifact with versions succeeds"),
    "open-not-atomic": (
        "FENCE-3",
        "a commit of an older epoch is accepted while its upload predates the open",
    ),
    "wrong-cross-cloud": ("XC-1", "cross_cloud is reported inverted"),
    "no-key-check": ("AUTH-1", "calls without a valid key are served"),
    "range-ignored": ("READ-3", "Range headers are ignored; the whole file is sent"),
    "commit-without-files": ("VER-4", "commits succeed without every file uploaded"),
    "url-never-expires": ("READ-4", "expired signed URLs are still served"),
    "fallback-silent": ("PLACE-3", "fallback placements carry no warning"),
    "version-overwrite": ("VER-2", "committing an existing version name replaces it"),
}


def check_faults(names: list[str] | tuple[str, ...] | frozenset[str]) -> list[str]:
    unknown = sorted(set(names) - FAULTS.keys())
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    return list(names)
