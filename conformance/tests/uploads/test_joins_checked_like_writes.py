"""A write that joins an upload (VER-5) is a write like any other: its file names are
checked (VER-1.b), a name declared with a size and again by name alone is twice (VER-1.c),
a declared size over the limit is 413 (VER-4.e), and each refusal leaves the upload as it
was; the version it makes has the size of every file of every write (API-1.b), and its
commit lists a joining write's streamed file like the first write's (VER-5.e). A version's
size counts its streamed files too (VER-6.a)."""

from __future__ import annotations

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
from conformance.rules import check_equal
from conformance.uploads import declared
from conformance.uploads import expect_version_files
from conformance.uploads import put_files
from conformance.uploads import streamed
from conformance.uploads import urls_of

V1 = "step-00000001"
BAD_NAMES = ["../x.bin", "a/../x.bin", "./x.bin", "a//x.bin", "/x.bin", "a/x.bin/", "a/./x"]


@pytest.mark.rule("VER-1.b", "VER-5.b", "VER-4.e")
def test_a_joining_write_with_an_unsafe_file_name_or_a_size_over_the_limit_is_refused(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("join-names"), "box-a")
    first = make_files({"rank0/m.bin": 64}, 160)
    reply = o41_api.write(box.artifact, box.token, V1, declared(first))
    put_files(o41_api, urls_of(reply, "VER-5.a", "first write"), first, "VER-5.a",
              "first write")
    upload = str(reply.body["upload"])
    before = snapshot(o41_api, box.artifact)
    for bad in BAD_NAMES:
        for how, spec in (("declared", {"name": bad, "size": 1, "sha256": sha256(b"x")}),
                          ("streamed", {"name": bad})):
            expect_error(o41_api.write(box.artifact, box.token, V1, [spec], upload), 400,
                         "invalid_argument", "VER-1.b", f"joining write of {how} {bad!r}")
            expect_unchanged(o41_api, box.artifact, before, "VER-1.b",
                             f"joining write of {how} {bad!r}")
    huge = {"name": "huge.bin", "size": 10**16, "sha256": sha256(b"")}
    expect_error(o41_api.write(box.artifact, box.token, V1, [huge], upload), 413,
                 "payload_too_large", "VER-4.e", "joining write declaring 10 PB")
    expect_unchanged(o41_api, box.artifact, before, "VER-4.e", "joining write declaring 10 PB")
    expect_ok(o41_api.commit(box.artifact, box.token, upload), "VER-5.b",
              "commit of the upload after the refused joins")
    expect_version_files(o41_api, box.artifact, V1, first, "VER-5.b", "the version")


@pytest.mark.rule("VER-1.b", "VER-1.c")
def test_a_name_declared_with_a_size_and_by_name_alone_is_twice(
    o41_env: Env, o41_api: Client
) -> None:
    """In one write, and in a streamed file's write with an unsafe name: both 400."""
    box = open_box(o41_api, o41_env.artifact("sized-streamed"), "box-a")
    data = b"twice"
    sized = {"name": "m.bin", "size": len(data), "sha256": sha256(data)}
    before = snapshot(o41_api, box.artifact)
    for what, specs in (("sized then streamed", [sized, {"name": "m.bin"}]),
                        ("streamed then sized", [{"name": "m.bin"}, sized])):
        expect_error(o41_api.write(box.artifact, box.token, V1, specs), 400,
                     "invalid_argument", "VER-1.c", f"a write of m.bin {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-1.c", f"a write of m.bin {what}")
    for bad in BAD_NAMES:
        expect_error(o41_api.write(box.artifact, box.token, V1, streamed([bad])), 400,
                     "invalid_argument", "VER-1.b", f"a write streaming {bad!r}")
    expect_unchanged(o41_api, box.artifact, before, "VER-1.b", "the refused writes")


@pytest.mark.rule("VER-5.a", "API-1.b")
def test_a_version_of_several_writes_has_the_files_and_size_of_all_of_them(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("join-size"), "box-a")
    parts = [make_files({f"rank{r}/m.bin": 100 * (r + 1)}, 170 + r) for r in range(3)]
    reply = o41_api.write(box.artifact, box.token, V1, declared(parts[0]))
    put_files(o41_api, urls_of(reply, "VER-5.a", "first write"), parts[0], "VER-5.a",
              "first write")
    upload = str(reply.body["upload"])
    for part in parts[1:]:
        joined = o41_api.write(box.artifact, box.token, V1, declared(part), upload)
        put_files(o41_api, urls_of(joined, "VER-5.a", "joining write"), part, "VER-5.a",
                  "joining write")
    total = sum(len(d) for p in parts for d in p.values())
    made = expect_ok(o41_api.commit(box.artifact, box.token, upload), "VER-5.a", "commit")
    check_equal(made.get("size"), total, "API-1.b", "the commit's Version size")
    check_equal(sorted(f.get("name") for f in made.get("files") or []),
                sorted(n for p in parts for n in p), "VER-5.a", "the commit's Version files")
    for what, body in (
        ("read", expect_ok(o41_api.read(box.artifact, V1), "VER-5.a", "read")),
        ("list", expect_ok(o41_api.list(box.artifact), "VER-5.a", "list")["versions"][0]),
        ("resume_from", expect_ok(o41_api.open(box.artifact, "latest", None, "box-b"),
                                  "VER-5.a", "relaunch")["resume_from"]),
    ):
        check_equal(body.get("size"), total, "API-1.b", f"the size of the version in {what}")


@pytest.mark.rule("VER-5.e", "VER-6.c")
def test_a_joining_writes_streamed_file_must_be_listed_by_the_commit(
    o41_env: Env, o41_api: Client
) -> None:
    """Rank 0 declares its file, rank 1 streams one into the same upload; both PUT. The
    commit must list rank 1's streamed file like any other (VER-6.c): left out, 409
    incomplete and nothing shows; listed, the upload commits with both."""
    box = open_box(o41_api, o41_env.artifact("join-streamed"), "box-a")
    first, free = make_files({"rank0/m.bin": 90}, 175), make_files({"rank1/s.bin": 45}, 176)
    reply = o41_api.write(box.artifact, box.token, V1, declared(first))
    put_files(o41_api, urls_of(reply, "VER-5.e", "first write"), first, "VER-5.e",
              "first write")
    upload = str(reply.body["upload"])
    joined = o41_api.write(box.artifact, box.token, V1, streamed(free), upload)
    put_files(o41_api, urls_of(joined, "VER-5.e", "joining write"), free, "VER-5.e",
              "joining write")
    before = snapshot(o41_api, box.artifact)
    for what, files in (("no list", None), ("the declared file only", declared(first))):
        expect_error(o41_api.commit(box.artifact, box.token, upload, files), 409,
                     "incomplete", "VER-5.e", f"commit with {what}")
        expect_invisible(o41_api, box.artifact, V1, "VER-5.e", f"commit with {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-5.e", f"commit with {what}")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, declared(free)), "VER-5.e",
              "commit listing the joining write's streamed file")
    expect_version_files(o41_api, box.artifact, V1, {**first, **free}, "VER-5.e",
                         "the version of both writes")


@pytest.mark.rule("VER-6.a", "API-1.b")
def test_a_versions_size_and_its_commit_reply_count_its_streamed_files(
    o41_env: Env, o41_api: Client
) -> None:
    """A streamed file has no size until its PUT; the Version's size is still the sum of
    all its files, in the commit's reply, a read, the list and a relaunch's resume_from."""
    box = open_box(o41_api, o41_env.artifact("streamed-size"), "box-a")
    fixed, free = make_files({"d.bin": 30}, 177), make_files({"s.bin": 70, "t/u.bin": 5}, 178)
    reply = o41_api.write(box.artifact, box.token, V1, declared(fixed) + streamed(free))
    put_files(o41_api, urls_of(reply, "VER-6.a", "write"), {**fixed, **free}, "VER-6.a",
              "write")
    made = expect_ok(o41_api.commit(box.artifact, box.token, str(reply.body["upload"]),
                                    declared(free)), "VER-6.a", "commit")
    total = 30 + 70 + 5
    check_equal({f.get("name"): (f.get("size"), f.get("sha256")) for f in made.get("files") or []},
                {n: (len(d), sha256(d)) for n, d in {**fixed, **free}.items()}, "VER-6.a",
                "the commit's Version files, streamed ones with what they received")
    for what, body in (
        ("the commit", made),
        ("read", expect_ok(o41_api.read(box.artifact, V1), "VER-6.a", "read")),
        ("list", expect_ok(o41_api.list(box.artifact), "VER-6.a", "list")["versions"][0]),
        ("resume_from", expect_ok(o41_api.open(box.artifact, "latest", None, "box-b"),
                                  "VER-6.a", "relaunch")["resume_from"]),
    ):
        check_equal(body.get("size"), total, "API-1.b", f"the size of the version in {what}")
