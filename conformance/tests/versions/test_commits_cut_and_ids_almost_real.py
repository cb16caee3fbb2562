"""Uploads at their edges (VER-4): commits cut half way at every point of a run, upload ids
almost real or of another artifact, empty files never PUT, PUTs one byte or zeros over the
declared size."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import edge_box
from conformance.actions import make_files
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.probes import expect_invisible
from conformance.rules import check
from conformance.rules import check_equal

FILES = {"model.pt": 1500, "optim.pt": 400, "meta.json": 30}


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
    a = edge_box(o41_api, o41_env.prefix, "cut")
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
    a = edge_box(o41_api, o41_env.prefix, "v4d")
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
    a = edge_box(o41_api, o41_env.prefix, "v4e")
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
    # The same body sent chunked (no Content-Length to compare): still 413, nothing stored.
    # The contract promises chunked bodies to streamed files only, so 411 is a refusal too.
    chunked = o41_api.put_chunked(urls["b"], [files["b"], b"!"])
    check(chunked.status in (411, 413), "VER-4.e",
          f"chunked PUT one byte longer than declared got {chunked.brief()}, not 413")
    expect_error(
        o41_api.commit(a.artifact, a.token, up.write.body["upload"]),
        409,
        "incomplete",
        "VER-4.e",
        "commit after the chunked PUT of b was refused",
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


@pytest.mark.rule("VER-4.a")
def test_commit_incomplete_when_empty_file_never_put(o41_env: Env, o41_api: Client) -> None:
    a = edge_box(o41_api, o41_env.prefix, "v4z")
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


@pytest.mark.rule("VER-4.d")
def test_commit_of_another_artifacts_upload_not_found(o41_env: Env, o41_api: Client) -> None:
    a, b = edge_box(o41_api, o41_env.prefix, "v4da"), edge_box(o41_api, o41_env.prefix, "v4db")
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
    a = edge_box(o41_api, o41_env.prefix, "v4n")
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
