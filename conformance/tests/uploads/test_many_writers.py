"""One upload, many writers (VER-5): the ranks of one job add their files to one upload with
writes that name it, and one commit makes one version of them all; a write that names an
upload it may not join is refused, and the refusal changes nothing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from conformance.actions import Box
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_invisible
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check
from conformance.rules import check_equal
from conformance.uploads import declared
from conformance.uploads import expect_version_files
from conformance.uploads import listing
from conformance.uploads import put_files
from conformance.uploads import streamed
from conformance.uploads import urls_of
from conformance.uploads import write_in_process

V1, V2 = "step-00000001", "step-00000002"


WHERE: dict[str, tuple[object, object]] = {}


def _started(api: Client, box: Box, version: str, files: dict[str, bytes],
             clause: str = "VER-5.a") -> str:
    """An upload of ``files`` (all PUT) started by ``box``; its id."""
    reply = api.write(box.artifact, box.token, version, declared(files))
    put_files(api, urls_of(reply, clause, "first write"), files, clause, "first write")
    WHERE[str(reply.body["upload"])] = (reply.body.get("location"), reply.body.get("route"))
    return str(reply.body["upload"])


def _join(api: Client, box: Box, version: str, upload: str, files: dict[str, bytes],
          clause: str = "VER-5.a") -> None:
    """A write into ``upload`` that must be accepted, then a PUT of each of its files."""
    reply = api.write(box.artifact, box.token, version, declared(files), upload)
    urls = urls_of(reply, clause, f"write into upload {upload}")
    check_equal(str(reply.body.get("upload")), upload, clause, "the joining write's upload")
    check_equal(sorted(urls), sorted(files), clause, "the joining write's PUT URLs")
    if upload in WHERE:
        check_equal((reply.body.get("location"), reply.body.get("route")), WHERE[upload],
                    clause, "the joining write's location and route (the upload's)")
    put_files(api, urls, files, clause, f"write into upload {upload}")


@pytest.mark.rule("VER-5.a", "VER-5.e")
def test_writes_from_another_process_and_threads_join_one_upload_into_one_version(
    o41_env: Env, o41_api: Client
) -> None:
    """Rank 0 starts the upload; rank 1 (another process) and ranks 2 and 3 (threads, each
    its own connection) join it at once with the same token; one commit has every file."""
    box = open_box(o41_api, o41_env.artifact("ranks"), "box-a")
    ranks = [make_files({f"rank{r}/shard.bin": 700 + r, f"rank{r}/meta.json": 20}, 50 + r)
             for r in range(4)]
    upload = _started(o41_api, box, V1, ranks[0])
    with ThreadPoolExecutor(max_workers=2) as pool:
        threads = [pool.submit(_join, o41_env.client(trail=o41_api.trail), box, V1, upload,
                               ranks[r]) for r in (2, 3)]
        other = write_in_process(o41_api, box.artifact, box.token, V1, upload, ranks[1])
        for fut in threads:
            fut.result()
    check(200 <= other["status"] < 300, "VER-5.a",
          f"the other process's write into the upload got {other['status']} {other['body']}")
    check_equal(str((other["body"] or {}).get("upload")), upload, "VER-5.a",
                "the other process's write's upload")
    check(all(200 <= s < 300 for s in other["puts"].values())
          and sorted(other["puts"]) == sorted(ranks[1]), "VER-5.a",
          f"the other process's PUTs: {other['puts']}")
    commit = expect_ok(o41_api.commit(box.artifact, box.token, upload), "VER-5.a", "commit")
    check_equal(commit.get("version"), V1, "VER-5.a", "the commit's version")
    everything = {n: d for files in ranks for n, d in files.items()}
    check_equal(commit.get("size"), sum(map(len, everything.values())), "VER-5.a",
                "the size of the one version (every write's files)")
    expect_version_files(o41_api, box.artifact, V1, everything, "VER-5.a", "the one version")
    listed = [v.get("version") for v in expect_ok(o41_api.list(box.artifact), "VER-5.a",
                                                  "list")["versions"]]
    check_equal(listed, [V1], "VER-5.a", "versions after one commit of four writers")


@pytest.mark.rule("VER-5.b")
def test_a_name_declared_twice_in_one_upload_is_refused_and_the_upload_still_commits(
    o41_env: Env, o41_api: Client
) -> None:
    """Across writes (the same name again, alone or beside a new one) and within one write:
    400 each time, and the upload keeps its files and bytes and commits without the names
    the refused writes brought."""
    box = open_box(o41_api, o41_env.artifact("twice"), "box-a")
    first = make_files({"model.bin": 300}, 1)
    upload = _started(o41_api, box, V1, first, "VER-5.b")
    log = make_files({"log.txt": 25}, 4)
    joined = o41_api.write(box.artifact, box.token, V1, streamed(log), upload)
    put_files(o41_api, urls_of(joined, "VER-5.b", "a streamed file's write"), log, "VER-5.b",
              "a streamed file's write")
    before = snapshot(o41_api, box.artifact)
    again = make_files({"model.bin": 300}, 2)
    fresh = make_files({"extra.bin": 40}, 3)
    refused = {
        "the same name in a second write": declared(again),
        "a new name beside the same one": declared(fresh) + declared(again),
        "one new name twice in one write": declared(fresh) + declared(fresh),
        "the streamed file's name, declared": declared(log),
        "the streamed file's name, streamed again": streamed(log),
        "a declared file's name, streamed": streamed(first),
    }
    for what, files in refused.items():
        reply = o41_api.write(box.artifact, box.token, V1, files, upload)
        expect_error(reply, 400, "invalid_argument", "VER-5.b", what)
        expect_unchanged(o41_api, box.artifact, before, "VER-5.b", what)
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(log)), "VER-5.b",
              "commit of the upload after the refused writes")
    expect_version_files(o41_api, box.artifact, V1, {**first, **log}, "VER-5.b",
                         "the committed upload")


@pytest.mark.rule("VER-5.c")
def test_writes_into_unknown_committed_or_another_artifacts_upload_are_not_found(
    o41_env: Env, o41_api: Client
) -> None:
    a = open_box(o41_api, o41_env.artifact("join-a"), "box-a")
    b = open_box(o41_api, o41_env.artifact("join-b"), "box-b")
    committed = _started(o41_api, a, V1, make_files({"m": 30}, 1), "VER-5.c")
    expect_ok(o41_api.commit(a.artifact, a.token, committed), "VER-5.c", "commit")
    of_b = _started(o41_api, b, V1, make_files({"m": 30}, 2), "VER-5.c")
    before_a, before_b = snapshot(o41_api, a.artifact), snapshot(o41_api, b.artifact)
    extra = declared(make_files({"late.bin": 10}, 3))
    cases = {
        "an unknown upload": (V2, "up-no-such-upload-0001"),
        "a committed upload": (V1, committed),
        "another artifact's upload": (V1, of_b),
    }
    for what, (version, upload) in cases.items():
        reply = o41_api.write(a.artifact, a.token, version, extra, upload)
        expect_error(reply, 404, "not_found", "VER-5.c", f"a write into {what}")
        expect_unchanged(o41_api, a.artifact, before_a, "VER-5.c", what)
        expect_unchanged(o41_api, b.artifact, before_b, "VER-5.c", what)
    expect_ok(o41_api.commit(b.artifact, b.token, of_b), "VER-5.c",
              "commit of b's upload after a's writes into it")
    expect_version_files(o41_api, b.artifact, V1, make_files({"m": 30}, 2), "VER-5.c",
                         "b's version")


@pytest.mark.rule("VER-5.c")
def test_a_write_into_an_upload_of_another_version_is_invalid(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("join-version"), "box-a")
    files = make_files({"m": 30}, 4)
    upload = _started(o41_api, box, V2, files, "VER-5.c")
    before = snapshot(o41_api, box.artifact)
    for version in (V1, "step-00000003"):
        reply = o41_api.write(box.artifact, box.token, version,
                              declared(make_files({"other.bin": 5}, 5)), upload)
        expect_error(reply, 400, "invalid_argument", "VER-5.c",
                     f"a write of {version} into an upload of {V2}")
        expect_unchanged(o41_api, box.artifact, before, "VER-5.c", f"write of {version}")
    expect_ok(o41_api.commit(box.artifact, box.token, upload), "VER-5.c", "commit after")
    expect_version_files(o41_api, box.artifact, V2, files, "VER-5.c", "the version")


@pytest.mark.rule("VER-5.d")
def test_writes_into_an_upload_of_an_older_epoch_are_fenced(
    o41_env: Env, o41_api: Client
) -> None:
    """Box A starts an upload, box B opens: A's token is fenced, and B's newest token may not
    take over A's upload either; neither can commit it, and it never shows."""
    name = o41_env.artifact("join-fenced")
    a = open_box(o41_api, name, "box-a")
    upload = _started(o41_api, a, V1, make_files({"m": 30}, 6), "VER-5.d")
    b = open_box(o41_api, name, "box-b")
    before = snapshot(o41_api, name)
    extra = declared(make_files({"rank1.bin": 12}, 7))
    for who, token in (("a's fenced token", a.token), ("b's newest token", b.token)):
        reply = o41_api.write(name, token, V1, extra, upload)
        expect_error(reply, 409, "fenced", "VER-5.d", f"a write into a's upload with {who}")
        expect_unchanged(o41_api, name, before, "VER-5.d", f"write with {who}")
    for who, token in (("a's fenced token", a.token), ("b's newest token", b.token)):
        expect_error(o41_api.commit(name, token, upload), 409, "fenced", "VER-5.d",
                     f"the commit of a's upload with {who}")
    expect_invisible(o41_api, name, V1, "VER-5.d", "a's upload")
    expect_unchanged(o41_api, name, before, "VER-5.d", "the refused commits")


@pytest.mark.rule("VER-5.d")
def test_a_write_into_an_upload_with_a_token_fenced_after_it_joined_is_fenced(
    o41_env: Env, o41_api: Client
) -> None:
    """A second rank joined in time; after box B's open, a third write is fenced."""
    name = o41_env.artifact("join-late")
    a = open_box(o41_api, name, "box-a")
    upload = _started(o41_api, a, V1, make_files({"r0": 20}, 8), "VER-5.d")
    _join(o41_api, a, V1, upload, make_files({"r1": 20}, 9), "VER-5.d")
    open_box(o41_api, name, "box-b")
    expect_error(o41_api.write(name, a.token, V1, declared(make_files({"r2": 20}, 10)), upload),
                 409, "fenced", "VER-5.d", "a third rank's write after the fencing open")
    expect_error(o41_api.commit(name, a.token, upload), 409, "fenced", "VER-5.d",
                 "the commit after the fencing open")
    expect_invisible(o41_api, name, V1, "VER-5.d", "the fenced upload")


@pytest.mark.rule("VER-5.a", "VER-5.e")
def test_the_commit_needs_the_files_of_every_write(o41_env: Env, o41_api: Client) -> None:
    """The second write's file not yet PUT: 409 incomplete, nothing shows; once it is, the
    same upload commits with both files."""
    box = open_box(o41_api, o41_env.artifact("join-all"), "box-a")
    first, second = make_files({"a.bin": 50}, 11), make_files({"b.bin": 60}, 12)
    upload = _started(o41_api, box, V1, first, "VER-5.e")
    reply = o41_api.write(box.artifact, box.token, V1, declared(second), upload)
    urls = urls_of(reply, "VER-5.e", "the second write")
    expect_error(o41_api.commit(box.artifact, box.token, upload), 409, "incomplete", "VER-5.e",
                 "commit before the second write's file arrived")
    expect_invisible(o41_api, box.artifact, V1, "VER-5.e", "the incomplete upload")
    put_files(o41_api, urls, second, "VER-5.e", "the second write")
    third = make_files({"c.bin": 70}, 13)
    _join(o41_api, box, V1, upload, third, "VER-5.e")  # the refused commit left it open
    expect_ok(o41_api.commit(box.artifact, box.token, upload), "VER-5.e", "commit after")
    expect_version_files(o41_api, box.artifact, V1, {**first, **second, **third}, "VER-5.e",
                         "the version of the three writes")
