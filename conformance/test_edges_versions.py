"""Versions at their edges (VER-1..4, READ-1): names at the edge of the allowed set,
artifacts with three or more versions, older versions not only the latest, uploads
staged or cut half way at every point of a run."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import (
    Box,
    commit_ok,
    download,
    edge_name,
    expect_error,
    expect_invisible,
    expect_ok,
    file_specs,
    make_files,
    open_box,
    sha256,
    start_upload,
)
from conformance.client import Client, Reply
from conformance.env import Env
from conformance.rules import check, check_equal

FILES = {"model.pt": 1500, "optim.pt": 400, "meta.json": 30}


def _box(env: Env, api: Client, slug: str, place: str | None = None) -> Box:
    return open_box(api, edge_name(env.prefix, slug, secrets.token_hex(3)), "box-a", place)


def _refused_now_or_at_commit(api: Client, box: Box, version: str, code: str, clause: str) -> None:
    up = start_upload(api, box.artifact, box.token, version, make_files({"m": 5}, 77))
    if not up.write.ok:
        expect_error(up.write, 409, code, clause, f"write of {version}")
        return
    expect_error(
        api.commit(box.artifact, box.token, str(up.upload_id)),
        409,
        code,
        clause,
        f"commit {version}",
    )


@pytest.mark.rule("VER-1.a")
@pytest.mark.parametrize(
    "version",
    [
        "step-0000000\u0661",
        "step-00000001\n",
        " step-00000001",
        "step-00000001 ",
        "step--0000001",
        "step-+0000001",
        "STEP-00000001",
        "step-0x000001",
    ],
)
def test_version_names_just_outside_the_pattern_invalid(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = _box(o41_env, o41_api, "v1")
    specs = [f.as_json() for f in file_specs(make_files({"m": 3}))]
    expect_error(
        o41_api.write(a.artifact, a.token, version, specs),
        400,
        "invalid_argument",
        "VER-1.a",
        f"write of version {version!r}",
    )
    check_equal(o41_api.artifact(a.artifact).body.get("versions"), 0, "VER-1.a", "versions")


@pytest.mark.rule("VER-1.a", "VER-1.b")
@pytest.mark.parametrize("version", ["step-00000000", "step-99999999"])
def test_names_at_the_edges_of_the_allowed_set_accepted(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = _box(o41_env, o41_api, "v1ok")
    files = make_files({"..a": 3, "a..": 4, ".hidden": 5, "d/.b/c": 6, "x-y_z.0": 0, "A/B": 1})
    commit_ok(o41_api, a, version, files, rule="VER-1.a")
    body = expect_ok(o41_api.read(a.artifact, version, urls=True), "VER-1.b", "read back")
    check_equal(download(o41_api, body), files, "VER-1.b", "files with edge names, read back")


@pytest.mark.rule("VER-1.b")
@pytest.mark.parametrize("file_name", ["./a", "a/.", "a/b/..", "a/", "/a", "a//b", "../a/b"])
def test_file_names_with_bad_segments_anywhere_invalid(
    o41_env: Env, o41_api: Client, file_name: str
) -> None:
    a = _box(o41_env, o41_api, "v1f")
    specs = [{"name": "ok.bin", "size": 1, "sha256": sha256(b"x")}]
    specs.append({"name": file_name, "size": 1, "sha256": sha256(b"x")})
    expect_error(
        o41_api.write(a.artifact, a.token, "step-00000001", specs),
        400,
        "invalid_argument",
        "VER-1.b",
        f"write with a second file {file_name!r}",
    )


@pytest.mark.rule("VER-2.a", "VER-2.b", "VER-3.a")
def test_older_versions_stay_immutable_and_steps_only_rise(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "imm", "aws/us-east-1")
    committed = {}
    for step in (1, 5, 10):
        files = make_files(FILES, step)
        committed[step] = (commit_ok(o41_api, a, f"step-{step:08d}", files), files)
    b = open_box(o41_api, a.artifact, "box-b", "gcp/europe-west4", rule="OPEN-2.a")
    for box in (a, b):
        if box is a:
            continue
        for step in (1, 5, 10):
            _refused_now_or_at_commit(o41_api, box, f"step-{step:08d}", "version_exists", "VER-2.a")
        for step in (0, 4, 7, 9):
            _refused_now_or_at_commit(
                o41_api, box, f"step-{step:08d}", "not_after_latest", "VER-3.a"
            )
    commit_ok(o41_api, b, "step-00000011", make_files(FILES, 11), rule="VER-3.a")
    # an identical second upload of a committed name is still refused
    _refused_identical(o41_api, b, "step-00000011", make_files(FILES, 11))
    # uploads PUT under the same file names afterwards must not leak into committed versions
    start_upload(o41_api, a.artifact, b.token, "step-00000012", make_files(FILES, 99))
    for step, (version, files) in committed.items():
        for place in ("aws/us-east-1", "azure/westeurope", None):
            body = expect_ok(
                o41_api.read(a.artifact, f"step-{step:08d}", urls=True, place=place),
                "VER-2.b",
                f"read of step {step} from {place}",
            )
            check_equal(
                (
                    body.get("location"),
                    sorted((f["name"], f["size"], f["sha256"]) for f in body["files"]),
                ),
                (
                    version["location"],
                    sorted((f["name"], f["size"], f["sha256"]) for f in version["files"]),
                ),
                "VER-2.b",
                f"step {step} after later commits and refused overwrites",
            )
        check_equal(download(o41_api, body), files, "VER-2.b", f"bytes of step {step}")


def _refused_identical(api: Client, box: Box, version: str, files: dict[str, bytes]) -> None:
    up = start_upload(api, box.artifact, box.token, version, files)
    if not up.write.ok:
        expect_error(up.write, 409, "version_exists", "VER-2.a", f"identical write of {version}")
        return
    expect_error(
        api.commit(box.artifact, box.token, str(up.upload_id)),
        409,
        "version_exists",
        "VER-2.a",
        f"identical second upload of {version}",
    )


def _damage(api: Client, up_write: Reply, files: dict[str, bytes], how: str) -> None:
    urls = {f["name"]: f["url"] for f in up_write.body["files"]}
    for i, (name, data) in enumerate(files.items()):
        last = i == len(files) - 1
        if last and how == "last-missing":
            continue
        if last and how == "last-byte-flipped":
            data = data[:-1] + bytes([data[-1] ^ 1])
        if last and how == "last-short":
            data = data[:-1]
        check(api.put(urls[name], data).ok, "VER-4.a", f"PUT of {name}")


@pytest.mark.rule("VER-4.a", "VER-4.b", "VER-4.c")
@pytest.mark.parametrize(
    "before,how",
    [(0, "last-missing"), (1, "last-byte-flipped"), (3, "last-short"), (3, "last-missing")],
)
def test_cut_commit_refused_and_invisible_at_every_point(
    o41_env: Env, o41_api: Client, how: str, before: int
) -> None:
    a = _box(o41_env, o41_api, "cut")
    for step in range(1, before + 1):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 4}, step))
    version = f"step-{before + 10:08d}"
    files = make_files(FILES, 3)
    up = start_upload(o41_api, a.artifact, a.token, version, files, put=False)
    expect_ok(up.write, "VER-4.a", "write")
    _damage(o41_api, up.write, files, how)
    clause = "VER-4.a" if how == "last-missing" else "VER-4.b"
    expect_error(
        o41_api.commit(a.artifact, a.token, up.write.body["upload"]),
        409,
        "incomplete",
        clause,
        f"commit with the {how}",
    )
    start_upload(o41_api, a.artifact, a.token, f"step-{before + 20:08d}", files)
    for hidden in (version, f"step-{before + 20:08d}"):
        expect_invisible(o41_api, a.artifact, hidden, "VER-4.c", f"upload {hidden}")
    latest = f"step-{before:08d}" if before else None
    body = expect_ok(o41_api.open(a.artifact, "latest", None, "box-b"), "VER-4.c", "relaunch")
    check_equal((body.get("resume_from") or {}).get("version"), latest, "VER-4.c", "resume_from")
    fresh = o41_api.open(a.artifact, None, None, "box-c")
    if before:
        expect_error(fresh, 409, "has_checkpoints", "OPEN-3.a", "fresh open")
    else:
        expect_ok(fresh, "VER-4.c", "fresh open of an artifact with only uncommitted uploads")
    expect_error(
        o41_api.open(o41_env.artifact("fk"), f"o41://{a.artifact}/step-{before + 20:08d}"),
        404,
        "not_found",
        "VER-4.c",
        "fork from an uncommitted upload",
    )


@pytest.mark.rule("VER-4.d")
def test_commit_of_almost_real_upload_not_found(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "v4d")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", make_files({"m": 3}))
    real = str(up.upload_id)
    flipped = real[:-3] + ("A" if real[-3] != "A" else "B") + real[-2:]
    for upload in (flipped, real + "x", real[:-1], "up_unknown"):
        expect_error(
            o41_api.commit(a.artifact, a.token, upload),
            404,
            "not_found",
            "VER-4.d",
            f"commit of upload {upload!r}",
        )
    expect_ok(o41_api.commit(a.artifact, a.token, real), "VER-4.d", "commit of the real upload")


@pytest.mark.rule("VER-4.e")
def test_put_one_byte_over_declared_too_large_and_not_stored(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "v4e")
    files = {"a": b"0123456789", "b": b"xyz"}
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", files, put=False)
    urls = {f["name"]: f["url"] for f in expect_ok(up.write, "VER-4.e", "write")["files"]}
    check_equal(o41_api.put(urls["a"], files["a"]).status // 100, 2, "VER-4.e", "exact PUT")
    reply = o41_api.put(urls["b"], files["b"] + b"!")
    check_equal(reply.status, 413, "VER-4.e", "PUT one byte longer than declared")
    expect_error(
        o41_api.commit(a.artifact, a.token, up.write.body["upload"]),
        409,
        "incomplete",
        "VER-4.e",
        "commit after the only PUT of b was refused",
    )
    specs = [{"name": "ok", "size": 1, "sha256": sha256(b"x")}]
    specs.append({"name": "huge", "size": 10**15, "sha256": sha256(b"")})
    expect_error(
        o41_api.write(a.artifact, a.token, "step-00000002", specs),
        413,
        "payload_too_large",
        "VER-4.e",
        "a second file declaring 1 PB",
    )


@pytest.mark.rule("READ-1.a", "READ-1.b")
def test_latest_and_unknown_versions_with_several_boxes(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "r1")
    for step in (3, 30, 300):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 4}, step))
        for urls in (True, False):  # every way of asking follows the newest commit
            body = expect_ok(o41_api.read(a.artifact, "latest", urls=urls), "READ-1.a", "latest")
            check_equal(body.get("version"), f"step-{step:08d}", "READ-1.a", f"latest, urls={urls}")
    b = open_box(o41_api, a.artifact, "box-b", rule="OPEN-2.a")
    start_upload(o41_api, a.artifact, b.token, "step-00000400", make_files({"m": 4}))
    for version in ("latest", None):
        body = expect_ok(o41_api.read(a.artifact, version), "READ-1.a", f"read {version}")
        check_equal(
            (body.get("version"), body.get("step"), body.get("holder")),
            ("step-00000300", 300, "box-a"),
            "READ-1.a",
            f"version={version} after a relaunch that has not committed yet",
        )
    for step in (2, 4, 31, 301, 400, 0):
        expect_error(
            o41_api.read(a.artifact, f"step-{step:08d}"),
            404,
            "not_found",
            "READ-1.b",
            f"read of step {step}",
        )
    fork = edge_name(o41_env.prefix, "r1f", secrets.token_hex(3))
    expect_ok(o41_api.open(fork, f"o41://{a.artifact}/step-00000030"), "FORK-2.a", "fork")
    for step in (3, 30, 300):  # a fork's versions are its own, not its source's
        expect_error(
            o41_api.read(fork, f"step-{step:08d}"),
            404,
            "not_found",
            "READ-1.b",
            f"read of the source's step {step} in the fork",
        )
    project, base = a.artifact.split("/")
    for missing in (f"{project}/{base.upper()}", f"{project}/{base}x", f"{project}x/{base}"):
        for reply in (o41_api.read(missing), o41_api.list(missing), o41_api.artifact(missing)):
            expect_error(reply, 404, "not_found", "READ-1.b", f"{reply.target}")


@pytest.mark.rule("VER-4.a")
def test_commit_incomplete_when_empty_file_never_put(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "v4z")
    files = {"model.pt": b"abc", "empty.marker": b""}
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", files, put=False)
    urls = {f["name"]: f["url"] for f in expect_ok(up.write, "VER-4.a", "write")["files"]}
    check(o41_api.put(urls["model.pt"], b"abc").ok, "VER-4.a", "PUT of model.pt")
    expect_error(
        o41_api.commit(a.artifact, a.token, str(up.upload_id)),
        409,
        "incomplete",
        "VER-4.a",
        "commit before the declared zero-byte file was PUT",
    )
    check(o41_api.put(urls["empty.marker"], b"").ok, "VER-4.a", "PUT of the empty file")
    expect_ok(o41_api.commit(a.artifact, a.token, str(up.upload_id)), "VER-4.a", "commit")


@pytest.mark.rule("VER-1.a")
def test_read_of_malformed_version_name_invalid(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "v1r")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 3}))
    for version in ("step-1", "step-000000001", "Step-00000001", "step-0000000\u0661"):
        expect_error(
            o41_api.read(a.artifact, version),
            400,
            "invalid_argument",
            "VER-1.a",
            f"read of version {version!r}",
        )


@pytest.mark.rule("VER-4.d")
def test_commit_of_another_artifacts_upload_not_found(o41_env: Env, o41_api: Client) -> None:
    a, b = _box(o41_env, o41_api, "v4da"), _box(o41_env, o41_api, "v4db")
    theirs = start_upload(o41_api, b.artifact, b.token, "step-00000001", make_files({"m": 3}))
    expect_error(
        o41_api.commit(a.artifact, a.token, str(theirs.upload_id)),
        404,
        "not_found",
        "VER-4.d",
        "commit of another artifact's upload",
    )
    expect_invisible(o41_api, a.artifact, "step-00000001", "VER-4.d", "another artifact's upload")
    expect_ok(o41_api.commit(b.artifact, b.token, str(theirs.upload_id)), "VER-4.d", "its own")


@pytest.mark.rule("VER-4.e")
def test_put_padded_with_zeros_too_large(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "v4n")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", {"m": b"abc"}, put=False)
    url = expect_ok(up.write, "VER-4.e", "write")["files"][0]["url"]
    for body in (b"abc\0", b"abc" + bytes(4096)):
        check_equal(o41_api.put(url, body).status, 413, "VER-4.e", f"PUT of {len(body)} bytes")
    expect_error(
        o41_api.commit(a.artifact, a.token, str(up.upload_id)),
        409,
        "incomplete",
        "VER-4.e",
        "commit after only oversized PUTs",
    )


@pytest.mark.rule("VER-2.a", "VER-2.b")
@pytest.mark.parametrize("same_bytes", [True, False], ids=["identical", "different"])
def test_twin_upload_of_a_committed_name_refused_and_never_leaks(
    o41_env: Env, o41_api: Client, same_bytes: bool
) -> None:
    """Two uploads of one name written before either commits: the first commit wins, the
    twin's commit is refused even with identical files, and bytes it PUTs after the commit
    never reach the committed version."""
    a = _box(o41_env, o41_api, "twin")
    first = make_files(FILES, 1)
    second = first if same_bytes else make_files(FILES, 2)
    up1 = start_upload(o41_api, a.artifact, a.token, "step-00000100", first)
    up2 = start_upload(o41_api, a.artifact, a.token, "step-00000100", second, put=False)
    body2 = expect_ok(up2.write, "VER-2.a", "write of the twin before any commit")
    committed = expect_ok(
        o41_api.commit(a.artifact, a.token, str(up1.upload_id)), "VER-2.a", "first commit"
    )
    for f in body2["files"]:  # the twin's own declared bytes, PUT after the commit
        o41_api.put(f["url"], second[f["name"]])
    expect_error(
        o41_api.commit(a.artifact, a.token, body2["upload"]),
        409,
        "version_exists",
        "VER-2.a",
        "commit of the twin upload of a committed name",
    )
    body = expect_ok(o41_api.read(a.artifact, "step-00000100", urls=True), "VER-2.b", "read")
    check_equal(
        sorted((f["name"], f["sha256"]) for f in body["files"]),
        sorted((f["name"], f["sha256"]) for f in committed["files"]),
        "VER-2.b",
        "files of the committed version after the twin's PUTs",
    )
    check_equal(download(o41_api, body), first, "VER-2.b", "bytes after the twin's late PUTs")
