"""Versions at their edges (VER-1..4, READ-1): names at the edge of the allowed set,
artifacts with three or more versions, older versions not only the latest, uploads
staged twice (cut uploads are in ``test_commits_cut_and_ids_almost_real.py`` beside it)."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import edge_box
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.names import edge_name
from conformance.probes import expect_version_refused
from conformance.rules import check_equal

FILES = {"model.pt": 1500, "optim.pt": 400, "meta.json": 30}


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
        "step-0000_001",  # an int to Python, as the two signs above
        "step- 0000001",
    ],
)
def test_version_names_just_outside_the_pattern_invalid(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = edge_box(o41_api, o41_env.prefix, "v1")
    specs = [f.as_json() for f in file_specs(make_files({"m": 3}))]
    expect_version_refused(o41_api, a, version, specs, "VER-1.a")
    check_equal(o41_api.artifact(a.artifact).body.get("versions"), 0, "VER-1.a", "versions")


@pytest.mark.rule("VER-1.a", "VER-1.b")
@pytest.mark.parametrize("version", ["step-00000000", "step-99999999"])
def test_names_at_the_edges_of_the_allowed_set_accepted(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    a = edge_box(o41_api, o41_env.prefix, "v1ok")
    files = make_files({"..a": 3, "a..": 4, ".hidden": 5, "d/.b/c": 6, "x-y_z.0": 0, "A/B": 1})
    commit_ok(o41_api, a, version, files, rule="VER-1.a")
    body = expect_ok(o41_api.read(a.artifact, version, urls=True), "VER-1.b", "read back")
    check_equal(download(o41_api, body), files, "VER-1.b", "files with edge names, read back")


@pytest.mark.rule("VER-1.b")
@pytest.mark.parametrize("file_name", ["./a", "a/.", "a/b/..", "a/", "/a", "a//b", "../a/b"])
def test_file_names_with_bad_segments_anywhere_invalid(
    o41_env: Env, o41_api: Client, file_name: str
) -> None:
    a = edge_box(o41_api, o41_env.prefix, "v1f")
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
    a = edge_box(o41_api, o41_env.prefix, "imm", "aws/us-east-1")
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


@pytest.mark.rule("READ-1.a", "READ-1.b")
def test_latest_and_unknown_versions_with_several_boxes(o41_env: Env, o41_api: Client) -> None:
    a = edge_box(o41_api, o41_env.prefix, "r1")
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


@pytest.mark.rule("VER-1.a")
def test_read_of_malformed_version_name_invalid(o41_env: Env, o41_api: Client) -> None:
    a = edge_box(o41_api, o41_env.prefix, "v1r")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 3}))
    for version in ("step-1", "step-000000001", "Step-00000001", "step-0000000\u0661"):
        expect_error(
            o41_api.read(a.artifact, version),
            400,
            "invalid_argument",
            "VER-1.a",
            f"read of version {version!r}",
        )


@pytest.mark.rule("VER-2.a", "VER-2.b")
@pytest.mark.parametrize("same_bytes", [True, False], ids=["identical", "different"])
def test_twin_upload_of_a_committed_name_refused_and_never_leaks(
    o41_env: Env, o41_api: Client, same_bytes: bool
) -> None:
    """Two uploads of one name written before either commits: the first commit wins, the
    twin's commit is refused even with identical files, and bytes it PUTs after the commit
    never reach the committed version."""
    a = edge_box(o41_api, o41_env.prefix, "twin")
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
