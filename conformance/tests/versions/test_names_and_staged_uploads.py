"""VER-1..4 at the places a shallow test does not look: odd spellings of names, the second
file of a write, artifacts with several versions, uploads staged but never committed, and
bytes that must stay what was committed whatever else is PUT later."""

from __future__ import annotations

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
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
from conformance.rules import rule_of
from conformance.rules import unknown_rules


def clause(cid: str) -> pytest.MarkDecorator:
    """Tag a test with its clause id where the contract's ids know clauses, else its rule."""
    return pytest.mark.rule(cid if not unknown_rules([cid]) else rule_of(cid))


def _box(env: Env, api: Client, slug: str, holder: str = "box-a") -> Box:
    return open_box(api, env.artifact(slug), holder)


def _refused(api: Client, box: Box, write: Reply, code: str, rule: str, what: str) -> None:
    """``code`` from the write, or, if the write was taken, from its commit."""
    if not write.ok:
        expect_error(write, 409, code, rule, f"write of {what}")
        return
    upload = expect_ok(write, rule, f"write of {what}")["upload"]
    expect_error(api.commit(box.artifact, box.token, upload), 409, code, rule, f"commit of {what}")


def _listed(api: Client, artifact: str) -> list[str]:
    return [v["version"] for v in expect_ok(api.list(artifact), "READ-1", "list")["versions"]]


@clause("VER-1.a")
@pytest.mark.parametrize(
    "version",
    [
        "step-00000001\n",
        "step-00000001 ",
        "step-000000001",
        "step-\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0661",
        "step-\uff10\uff10\uff10\uff10\uff10\uff10\uff10\uff11",
        "STEP-00000001",
    ],
    ids=["newline", "space", "nine-digits", "arabic-indic", "fullwidth", "capitals"],
)
def test_write_invalid_when_version_name_almost_valid(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = _box(o41_env, o41_api, "ver1a")
    specs = [f.as_json() for f in file_specs(make_files({"m": 8}))]
    expect_version_refused(o41_api, a, version, specs, "VER-1")
    check_equal(_listed(o41_api, a.artifact), [], "VER-1", "versions after the refused write")


@clause("VER-1.a")
@pytest.mark.parametrize("version", ["step-1", "Step-00000001", "step-0000000x", "step_00000001"])
def test_read_invalid_when_version_name_malformed(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = _box(o41_env, o41_api, "ver1r")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}))
    expect_error(
        o41_api.read(a.artifact, version), 400, "invalid_argument", "VER-1", f"read of {version!r}"
    )


@clause("VER-1.b")
@pytest.mark.parametrize("bad", ["./m", "m/", "a/./b", "a//b", "../m", "a/.."])
@pytest.mark.parametrize("position", [0, 1])
def test_write_invalid_when_any_file_name_unsafe(
    o41_env: Env, o41_api: Client, bad: str, position: int
) -> None:
    a = _box(o41_env, o41_api, "ver1b")
    specs = [{"name": "ok.bin", "size": 1, "sha256": sha256(b"x")}]
    specs.insert(position, {"name": bad, "size": 1, "sha256": sha256(b"y")})
    expect_error(
        o41_api.write(a.artifact, a.token, "step-00000001", specs),
        400,
        "invalid_argument",
        "VER-1",
        f"write with file {bad!r} at position {position}",
    )


@clause("VER-2.a")
def test_write_refused_when_rewriting_an_older_version_of_many(
    o41_env: Env, o41_api: Client
) -> None:
    a = _box(o41_env, o41_api, "ver2old")
    for step in (1, 2, 3, 4):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 16}, step))
    for step in (1, 3):
        up = start_upload(o41_api, a.artifact, a.token, f"step-{step:08d}", make_files({"m": 16}))
        _refused(o41_api, a, up.write, "version_exists", "VER-2", f"step {step} again")
    check_equal(len(_listed(o41_api, a.artifact)), 4, "VER-2", "number of versions")


@clause("VER-2.a")
def test_commit_refused_when_second_upload_has_identical_files(
    o41_env: Env, o41_api: Client
) -> None:
    a = _box(o41_env, o41_api, "ver2same")
    files = make_files({"m": 64, "n": 10}, 4)
    first = start_upload(o41_api, a.artifact, a.token, "step-00000005", files)
    second = start_upload(o41_api, a.artifact, a.token, "step-00000005", files)
    expect_second_commit_refused(o41_api, a, first, second, "version_exists", "VER-2",
                                 "commit of a second upload of step 5 with the same files")


@clause("VER-2.b")
def test_committed_bytes_unchanged_by_a_later_put_of_the_same_name(
    o41_env: Env, o41_api: Client
) -> None:
    a = _box(o41_env, o41_api, "ver2b-put")
    first, second = make_files({"m": 5000}, 1), make_files({"m": 5000}, 2)
    up1 = start_upload(o41_api, a.artifact, a.token, "step-00000007", first)
    up2 = start_upload(o41_api, a.artifact, a.token, "step-00000007", second)
    expect_ok(o41_api.commit(a.artifact, a.token, str(up1.upload_id)), "VER-2", "commit")
    o41_api.commit(a.artifact, a.token, str(up2.upload_id))
    body = expect_ok(o41_api.read(a.artifact, "step-00000007", urls=True), "READ-2", "read")
    check_equal(download(o41_api, body), first, "VER-2", "bytes of the committed version")
    check_equal(download(o41_api, body, parts=3), first, "VER-2", "ranged bytes of it")


@clause("VER-2.b")
def test_old_version_bytes_unchanged_after_newer_versions(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver2b-old")
    files = {step: make_files({"m": 3000, "o": 100}, step) for step in (1, 2, 3)}
    for step, data in files.items():
        commit_ok(o41_api, a, f"step-{step:08d}", data)
    bodies = {
        step: expect_ok(o41_api.read(a.artifact, f"step-{step:08d}", urls=True), "READ-2", "read")
        for step in (3, 2, 1)
    }
    for step in (1, 2, 3):
        check_equal(download(o41_api, bodies[step]), files[step], "VER-2", f"bytes of step {step}")


@clause("VER-3.a")
@pytest.mark.parametrize("step", [29, 15, 1])
def test_write_refused_when_step_below_latest_of_three(
    o41_env: Env, o41_api: Client, step: int
) -> None:
    a = _box(o41_env, o41_api, "ver3")
    for done in (10, 20, 30):
        commit_ok(o41_api, a, f"step-{done:08d}", make_files({"m": 8}, done))
    name = f"step-{step:08d}"
    up = start_upload(o41_api, a.artifact, a.token, name, make_files({"m": 8}))
    _refused(o41_api, a, up.write, "not_after_latest", "VER-3", f"step {step} after step 30")
    check(name not in _listed(o41_api, a.artifact), "VER-3", f"{name} shows after a refusal")


@clause("VER-4.a")
def test_commit_incomplete_when_an_empty_file_was_never_put(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver4a")
    files = make_files({"m": 100, "empty": 0}, 3)
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", files, put=False)
    body = expect_ok(up.write, "VER-4", "write")
    url = next(f["url"] for f in body["files"] if f["name"] == "m")
    check(o41_api.put(url, files["m"]).ok, "VER-4", "PUT of m")
    expect_error(
        o41_api.commit(a.artifact, a.token, body["upload"]),
        409,
        "incomplete",
        "VER-4",
        "commit before the empty file was PUT",
    )
    check_equal(_listed(o41_api, a.artifact), [], "VER-4", "versions after the refused commit")


@clause("VER-4.c")
def test_fresh_open_allowed_when_the_only_upload_is_uncommitted(
    o41_env: Env, o41_api: Client
) -> None:
    a = _box(o41_env, o41_api, "ver4c-fresh")
    start_upload(o41_api, a.artifact, a.token, "step-00000001", make_files({"m": 50}))
    b = open_box(o41_api, a.artifact, "box-b", resume=None, rule="VER-4")
    check_equal(b.opened.get("resume_from"), None, "VER-4", "resume_from of the fresh open")


@clause("VER-4.c")
def test_uploaded_but_uncommitted_version_invisible_after_two_commits(
    o41_env: Env, o41_api: Client
) -> None:
    a = _box(o41_env, o41_api, "ver4c-late")
    for step in (1, 2):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 20}, step))
    start_upload(o41_api, a.artifact, a.token, "step-00000003", make_files({"m": 20}, 3))
    state = expect_ok(o41_api.artifact(a.artifact), "VER-4", "artifacts/read")
    check_equal((state["latest"], state["versions"]), ("step-00000002", 2), "VER-4", "latest")
    check_equal(_listed(o41_api, a.artifact), ["step-00000001", "step-00000002"], "VER-4", "list")
    latest = expect_ok(o41_api.read(a.artifact), "VER-4", "read latest")
    check_equal(latest["version"], "step-00000002", "VER-4", "read of latest")
    b = open_box(o41_api, a.artifact, "box-b", rule="VER-4")
    check_equal((b.opened.get("resume_from") or {}).get("version"), "step-00000002", "VER-4",
                "resume_from")


@clause("VER-4.d")
def test_commit_not_found_when_upload_id_looks_real_or_is_another_artifacts(
    o41_env: Env, o41_api: Client
) -> None:
    a, other = _box(o41_env, o41_api, "ver4d"), _box(o41_env, o41_api, "ver4d-o")
    mine = start_upload(o41_api, a.artifact, a.token, "step-00000001", make_files({"m": 5}))
    theirs = start_upload(o41_api, other.artifact, other.token, "step-00000001",
                          make_files({"m": 5}))
    real = str(mine.upload_id)
    forged = real[:-4] + ("zzzz" if real[-4:] != "zzzz" else "yyyy")
    for upload, what in ((forged, "a real-looking unknown id"), (theirs.upload_id, "theirs")):
        expect_error(
            o41_api.commit(a.artifact, a.token, str(upload)),
            404,
            "not_found",
            "VER-4",
            f"commit of {what}",
        )


@clause("VER-4.e")
def test_put_too_large_when_extra_bytes_are_zero_padding(o41_env: Env, o41_api: Client) -> None:
    a = _box(o41_env, o41_api, "ver4e")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", {"m": b"abc"}, put=False)
    url = expect_ok(up.write, "VER-4", "write")["files"][0]["url"]
    for body in (b"abc\0\0\0\0", b"abc\0"):
        check_equal(o41_api.put(url, body).status, 413, "VER-4", f"PUT of {body!r}")


@clause("VER-4.e")
def test_write_too_large_when_a_later_file_is_over_the_limit(
    o41_env: Env, o41_api: Client
) -> None:
    a = _box(o41_env, o41_api, "ver4e-l")
    specs = [
        {"name": "small", "size": 1, "sha256": sha256(b"x")},
        {"name": "huge", "size": 10**16, "sha256": sha256(b"")},
    ]
    expect_error(
        o41_api.write(a.artifact, a.token, "step-00000001", specs),
        413,
        "payload_too_large",
        "VER-4",
        "write whose second file declares 10 PB",
    )
