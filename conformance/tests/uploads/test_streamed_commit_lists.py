"""The list a commit gives of its streamed files (VER-6.c, VER-6.d): missing, short, wrong or
never-uploaded entries are 409 incomplete, names that are not the upload's or listed twice
are 400; either way nothing shows, and the same upload then commits with the right list."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_invisible
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check
from conformance.uploads import declared
from conformance.uploads import expect_version_files
from conformance.uploads import listing
from conformance.uploads import put_files
from conformance.uploads import streamed
from conformance.uploads import urls_of

V1 = "step-00000001"


def _entry(name: str, data: bytes, **changes: Any) -> dict[str, Any]:
    return {"name": name, "size": len(data), "sha256": sha256(data), **changes}


@pytest.mark.rule("VER-6.c")
def test_a_commit_list_missing_short_or_wrong_is_incomplete_and_the_right_list_commits(
    o41_env: Env, o41_api: Client
) -> None:
    """Streamed a and b (PUT), streamed c (not yet PUT), declared d (PUT)."""
    box = open_box(o41_api, o41_env.artifact("lists"), "box-a")
    files = make_files({"a.bin": 200, "b.bin": 150, "c.bin": 90, "d.bin": 40}, 41)
    a, b, c, d = (files[n] for n in ("a.bin", "b.bin", "c.bin", "d.bin"))
    specs = streamed(["a.bin", "b.bin", "c.bin"]) + declared({"d.bin": d})
    reply = o41_api.write(box.artifact, box.token, V1, specs)
    urls = urls_of(reply, "VER-6.c", "write")
    upload = str(reply.body["upload"])
    put_files(o41_api, urls, {"a.bin": a, "b.bin": b, "d.bin": d}, "VER-6.c", "write")
    before = snapshot(o41_api, box.artifact)
    right_ab = [_entry("a.bin", a), _entry("b.bin", b)]
    wrong: dict[str, list[dict[str, Any]] | None] = {
        "no files at all (absent)": None,
        "an empty list": [],
        "b left out": [_entry("a.bin", a)],
        "b one byte short": [_entry("a.bin", a), _entry("b.bin", b, size=len(b) - 1)],
        "b one byte long": [_entry("a.bin", a), _entry("b.bin", b, size=len(b) + 1)],
        "b with a's sha256": [_entry("a.bin", a), _entry("b.bin", b, sha256=sha256(a))],
        "a and b swapped": [_entry("a.bin", b), _entry("b.bin", a)],
        "d with other values than declared": [*right_ab, _entry("d.bin", d, size=len(d) + 1)],
        "c, never uploaded, listed with its bytes": [*right_ab, _entry("c.bin", c)],
        "c, never uploaded, listed as empty": [*right_ab, _entry("c.bin", b"")],
    }
    for what, files_listed in wrong.items():
        reply = o41_api.commit(box.artifact, box.token, upload, files_listed)
        expect_error(reply, 409, "incomplete", "VER-6.c", f"commit with {what}")
        expect_invisible(o41_api, box.artifact, V1, "VER-6.c", f"commit with {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-6.c", f"commit with {what}")
    put_files(o41_api, urls, {"c.bin": c}, "VER-6.c", "the PUT of c")
    expect_error(o41_api.commit(box.artifact, box.token, upload, right_ab), 409, "incomplete",
                 "VER-6.c", "commit without c once c is uploaded")
    right = [*right_ab, _entry("c.bin", c)]
    # Every file is there now: only the declared file's listed values are wrong.
    for what, entry in (("size", _entry("d.bin", d, size=len(d) + 1)),
                        ("sha256", _entry("d.bin", d, sha256=sha256(a)))):
        expect_error(o41_api.commit(box.artifact, box.token, upload, [*right, entry]), 409,
                     "incomplete", "VER-6.c", f"complete upload, d listed with another {what}")
        expect_invisible(o41_api, box.artifact, V1, "VER-6.c", f"d with another {what}")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, right), "VER-6.c",
              "commit with the right list")
    expect_version_files(o41_api, box.artifact, V1, files, "VER-6.c", "the version")


@pytest.mark.rule("VER-6.d")
def test_a_commit_list_naming_other_files_or_one_twice_is_invalid_and_the_upload_commits(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("lists-bad"), "box-a")
    free, fixed = make_files({"s.bin": 120}, 42), make_files({"d.bin": 30}, 43)
    other = open_box(o41_api, o41_env.artifact("lists-other"), "box-b")
    theirs = make_files({"theirs.bin": 10}, 44)
    reply = o41_api.write(other.artifact, other.token, V1, streamed(theirs))
    put_files(o41_api, urls_of(reply, "VER-6.d", "the other upload's write"), theirs, "VER-6.d",
              "the other upload")
    reply = o41_api.write(box.artifact, box.token, V1, streamed(free) + declared(fixed))
    urls = urls_of(reply, "VER-6.d", "write")
    upload = str(reply.body["upload"])
    put_files(o41_api, urls, {**free, **fixed}, "VER-6.d", "write")
    before = snapshot(o41_api, box.artifact)
    s, d = _entry("s.bin", free["s.bin"]), _entry("d.bin", fixed["d.bin"])
    wrong = {
        "a file that is not of the upload": [s, _entry("ghost.bin", b"")],
        "another upload's file": [s, _entry("theirs.bin", theirs["theirs.bin"])],
        "the streamed file twice": [s, s],
        "the streamed file twice, once with other values": [s, {**s, "size": 1}],
        "the declared file twice": [s, d, d],
        "a name spelled as a path to it": [s, _entry("./s.bin", free["s.bin"])],
        "the streamed file's name in upper case": [_entry("S.BIN", free["s.bin"])],
    }
    for what, listed in wrong.items():
        reply = o41_api.commit(box.artifact, box.token, upload, listed)
        expect_error(reply, 400, "invalid_argument", "VER-6.d", f"commit listing {what}")
        expect_invisible(o41_api, box.artifact, V1, "VER-6.d", f"commit listing {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-6.d", f"commit listing {what}")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(free)), "VER-6.d",
              "commit with the right list")
    expect_version_files(o41_api, box.artifact, V1, {**free, **fixed}, "VER-6.d", "the version")


@pytest.mark.rule("VER-6.c", "API-1.f")
def test_a_commit_list_entry_without_its_size_or_sha256_is_refused_and_the_upload_commits(
    o41_env: Env, o41_api: Client
) -> None:
    """A streamed file listed by name and size alone (or name and sha256 alone) does not
    say what its writer wrote: a missing field (400) or values other than received (409
    incomplete), the contract reads either way; never a commit that fills them in."""
    box = open_box(o41_api, o41_env.artifact("lists-partial"), "box-a")
    free = make_files({"s.bin": 80, "t.bin": 30}, 45)
    reply = o41_api.write(box.artifact, box.token, V1, streamed(free))
    urls = urls_of(reply, "VER-6.c", "write")
    upload = str(reply.body["upload"])
    put_files(o41_api, urls, free, "VER-6.c", "write")
    before = snapshot(o41_api, box.artifact)
    t = _entry("t.bin", free["t.bin"])
    partial = {
        "s without sha256": {"name": "s.bin", "size": len(free["s.bin"])},
        "s without size": {"name": "s.bin", "sha256": sha256(free["s.bin"])},
        "s by name alone": {"name": "s.bin"},
    }
    for what, entry in partial.items():
        reply = o41_api.commit(box.artifact, box.token, upload, [entry, t])
        got = (reply.status, reply.code)
        check(got in ((400, "invalid_argument"), (409, "incomplete")), "VER-6.c",
              f"commit listing {what} got {reply.brief()}, not 400 or 409 incomplete")
        expect_invisible(o41_api, box.artifact, V1, "VER-6.c", f"commit listing {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-6.c", f"commit listing {what}")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(free)), "VER-6.c",
              "commit with the right list")
    expect_version_files(o41_api, box.artifact, V1, free, "VER-6.c", "the version")
