"""Writing versions: names, immutability, step order and complete uploads (VER-1..4)."""

from __future__ import annotations

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.probes import expect_second_commit_refused
from conformance.probes import expect_version_refused
from conformance.rules import check
from conformance.rules import check_equal

TINY = {"m": 64}


def _box(o41_env: Env, o41_api: Client, slug: str) -> Box:
    return open_box(o41_api, o41_env.artifact(slug), "box-a")


def _expect_now_or_at_commit(
    api: Client, artifact: str, token: str, up_write: Reply, code: str, rule: str, what: str
) -> None:
    """version_exists / not_after_latest may come from the write or from the commit."""
    if not up_write.ok:
        expect_error(up_write, 409, code, rule, f"write of {what}")
        return
    upload = expect_ok(up_write, rule, f"write of {what}")["upload"]
    expect_error(api.commit(artifact, token, upload), 409, code, rule, f"commit of {what}")


@pytest.mark.rule("VER-1.a")
@pytest.mark.parametrize(
    "version",
    [
        "step-1",
        "step-000000001",
        "Step-00000001",
        "step-0000000a",
        "latest",
        "step_00000001",
        "step-00000001/x",
        "",
    ],
)
def test_write_invalid_when_version_name_malformed(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = _box(o41_env, o41_api, "ver1")
    specs = [f.as_json() for f in file_specs(make_files(TINY))]
    expect_version_refused(o41_api, a, version, specs, "VER-1")


@pytest.mark.rule("VER-1.b")
@pytest.mark.parametrize(
    "file_name", ["../escape", "/etc/passwd", "a//b", "a/./b", "a/../b", ".", "..", "", "dir/"]
)
def test_write_invalid_when_file_name_unsafe(o41_env: Env, o41_api: Client, file_name: str) -> None:
    a = _box(o41_env, o41_api, "ver1f")
    specs = [{"name": file_name, "size": 1, "sha256": sha256(b"x")}]
    expect_error(
        o41_api.write(a.artifact, a.token, "step-00000001", specs),
        400,
        "invalid_argument",
        "VER-1",
        f"write of file {file_name!r}",
    )


@pytest.mark.rule("VER-1.b")
def test_commit_keeps_nested_relative_file_names(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "nested")
    files = make_files({"shards/rank-0/model.pt": 100, "shards/rank-1/model.pt": 0, "m": 3})
    commit_ok(o41_api, a, "step-00000001", files, rule="VER-1")
    body = expect_ok(o41_api.read(a.artifact, "step-00000001"), "READ-1", "read")
    check_equal(sorted(f["name"] for f in body["files"]), sorted(files), "VER-1", "file names")


def _expect_step_100_holds(api: Client, artifact: str, files: dict[str, bytes], what: str) -> None:
    """VER-2: ``step-00000100`` of ``artifact`` still holds the first committed ``files``."""
    body = expect_ok(api.read(artifact, "step-00000100"), "READ-1", "read")
    check_equal([f["sha256"] for f in body["files"]], [sha256(files["m"])], "VER-2", what)


@pytest.mark.rule("VER-2.a", "VER-2.b")
def test_commit_refused_when_version_exists(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver2")
    original = make_files(TINY, 1)
    commit_ok(o41_api, a, "step-00000100", original)
    up = start_upload(o41_api, a.artifact, a.token, "step-00000100", make_files(TINY, 2))
    _expect_now_or_at_commit(
        o41_api, a.artifact, a.token, up.write, "version_exists", "VER-2", "an existing version"
    )
    _expect_step_100_holds(o41_api, a.artifact, original, "sha256 of the committed version")


@pytest.mark.rule("VER-2.a")
def test_commit_refused_when_same_version_uploaded_twice(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver2b")
    first, second = make_files(TINY, 1), make_files(TINY, 2)
    up1 = start_upload(o41_api, a.artifact, a.token, "step-00000100", first)
    up2 = start_upload(o41_api, a.artifact, a.token, "step-00000100", second)
    for up in (up1, up2):
        expect_ok(up.write, "VER-2", "write of step 100 before any commit")
    expect_second_commit_refused(o41_api, a, up1, up2, "version_exists", "VER-2",
                                 "second commit of the same version name")
    _expect_step_100_holds(o41_api, a.artifact, first,
                           "the committed version's sha256 after the second commit")


@pytest.mark.rule("VER-3.a")
def test_commit_refused_when_step_not_after_latest(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver3")
    commit_ok(o41_api, a, "step-00000200", make_files(TINY))
    up = start_upload(o41_api, a.artifact, a.token, "step-00000150", make_files(TINY))
    _expect_now_or_at_commit(
        o41_api,
        a.artifact,
        a.token,
        up.write,
        "not_after_latest",
        "VER-3",
        "step 150 after step 200",
    )


@pytest.mark.rule("VER-3.a")
def test_commit_refused_when_latest_moved_past(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver3b")
    late = start_upload(o41_api, a.artifact, a.token, "step-00000250", make_files(TINY))
    early = start_upload(o41_api, a.artifact, a.token, "step-00000300", make_files(TINY))
    expect_second_commit_refused(o41_api, a, early, late, "not_after_latest", "VER-3",
                                 "commit of step 250 after step 300")
    check_equal(
        expect_ok(o41_api.artifact(a.artifact), "READ-1", "read")["latest"],
        "step-00000300",
        "VER-3",
        "latest",
    )


def _assert_invisible(api: Client, artifact: str, version: str) -> None:
    expect_error(api.read(artifact, version), 404, "not_found", "VER-4", f"read of {version}")
    expect_error(api.read(artifact, "latest"), 404, "not_found", "VER-4", "read of latest")
    listed = expect_ok(api.list(artifact), "VER-4", "list")["versions"]
    check_equal(listed, [], "VER-4", "versions listed")
    check_equal(
        expect_ok(api.artifact(artifact), "VER-4", "read")["latest"], None, "VER-4", "latest"
    )


@pytest.mark.rule("VER-4.a", "VER-4.b", "VER-4.c")
@pytest.mark.parametrize("damage", ["nothing_put", "one_file_missing", "bytes_differ", "short"])
def test_commit_incomplete_when_upload_damaged(o41_env: Env, o41_api: Client, damage: str) -> None:
    a = _box(o41_env, o41_api, "ver4")
    files = make_files({"model.pt": 2000, "optim.pt": 500}, 7)
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", files, put=False)
    body = expect_ok(up.write, "VER-4", "write")
    urls = {f["name"]: f["url"] for f in body["files"]}
    if damage == "one_file_missing":
        check(o41_api.put(urls["model.pt"], files["model.pt"]).ok, "VER-4", "PUT model.pt")
    elif damage == "bytes_differ":
        o41_api.put(urls["model.pt"], files["model.pt"])
        o41_api.put(urls["optim.pt"], bytes(500))
    elif damage == "short":
        o41_api.put(urls["model.pt"], files["model.pt"])
        o41_api.put(urls["optim.pt"], files["optim.pt"][:-1])
    expect_error(
        o41_api.commit(a.artifact, a.token, body["upload"]),
        409,
        "incomplete",
        "VER-4",
        f"commit with {damage}",
    )
    _assert_invisible(o41_api, a.artifact, "step-00000001")
    if damage in ("nothing_put", "one_file_missing"):
        # A refused commit changes nothing: once the missing files arrive, it commits.
        for name in ("optim.pt",) if damage == "one_file_missing" else sorted(files):
            check(o41_api.put(urls[name], files[name]).ok, "VER-4", f"PUT {name} after")
        expect_ok(o41_api.commit(a.artifact, a.token, body["upload"]), "VER-4.a",
                  f"commit with {damage}, once every file is PUT")


@pytest.mark.rule("VER-4.c")
def test_uploads_invisible_until_commit(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver4v")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", make_files(TINY))
    _assert_invisible(o41_api, a.artifact, "step-00000001")
    expect_ok(o41_api.commit(a.artifact, a.token, str(up.upload_id)), "VER-4", "commit")
    check_equal(
        expect_ok(o41_api.read(a.artifact), "READ-1", "read")["version"],
        "step-00000001",
        "VER-4",
        "latest after the commit",
    )


@pytest.mark.rule("VER-4.e")
def test_put_too_large_when_body_longer_than_declared(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver4p")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", {"m": b"abc"}, put=False)
    url = expect_ok(up.write, "VER-4", "write")["files"][0]["url"]
    reply = o41_api.put(url, b"abcd")
    check_equal(reply.status, 413, "VER-4", "status of a PUT longer than declared")


@pytest.mark.rule("VER-4.e")
def test_write_too_large_when_declared_size_over_limit(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver4l")
    specs = [{"name": "huge", "size": 10**16, "sha256": sha256(b"")}]
    expect_error(
        o41_api.write(a.artifact, a.token, "step-00000001", specs),
        413,
        "payload_too_large",
        "VER-4",
        "write declaring 10 PB",
    )


@pytest.mark.rule("VER-4.d")
def test_commit_not_found_when_upload_unknown(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver4u")
    expect_error(
        o41_api.commit(a.artifact, a.token, "up_does_not_exist"),
        404,
        "not_found",
        "VER-4",
        "commit of an unknown upload",
    )
