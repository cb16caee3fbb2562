"""VER-1.c: the files a write declares. One name declared twice is a malformed write (400,
and nothing is staged); two names with the same size and sha256 are two files, as a model
saved with tied weights or a copied config is, and both read back; so are names that differ
only in case (names are strings, compared as they are)."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_invisible
from conformance.rules import check_equal


@pytest.mark.rule("VER-1.c")
def test_two_names_with_the_same_content_are_two_files(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("v1c-twins"), "box-a")
    same = make_files({"x": 700}, 17)["x"]
    files = {"a/weights.bin": same, "b/weights.bin": same, "c/empty": b"", "d/empty": b"",
             "other": make_files({"o": 9}, 18)["o"], "Model.pt": same, "model.pt": same,
             "MODEL.PT": b"x"}
    commit_ok(o41_api, a, "step-00000001", files, rule="VER-1.c")
    body = expect_ok(o41_api.read(a.artifact, urls=True), "VER-1.c", "read")
    check_equal(sorted(f["name"] for f in body["files"]), sorted(files), "VER-1.c",
                "files of a version with twin contents")
    check_equal(body.get("size"), sum(len(v) for v in files.values()), "API-1.b", "size")
    check_equal(download(o41_api, body), files, "VER-1.c", "bytes of every twin")


@pytest.mark.rule("VER-1.c", "API-1.f")
@pytest.mark.parametrize("twice", ["same-file", "other-size"])
def test_one_name_declared_twice_invalid(o41_env: Env, o41_api: Client, twice: str) -> None:
    a = open_box(o41_api, o41_env.artifact("v1c-dup"), "box-a")
    files = make_files({"m.bin": 10, "n.bin": 4}, 19)
    specs = [f.as_json() for f in file_specs(files)]
    again = dict(specs[0]) if twice == "same-file" else {**specs[0], "size": 4,
                                                        "sha256": specs[1]["sha256"]}
    for declared in ([*specs, again], [again, *specs]):
        reply = o41_api.write(a.artifact, a.token, "step-00000001", declared)
        expect_error(reply, 400, "invalid_argument", "VER-1.c",
                     f"a write declaring m.bin twice ({twice})")
    expect_invisible(o41_api, a.artifact, "step-00000001", "VER-1.c", "after the refusals")
    commit_ok(o41_api, a, "step-00000001", files, rule="VER-1.c")


@pytest.mark.rule("VER-2.a")
def test_second_commit_of_the_same_upload_version_exists(o41_env: Env, o41_api: Client) -> None:
    """A retried commit is not idempotent in the contract: the name is committed, so 409."""
    a = open_box(o41_api, o41_env.artifact("v2a-again"), "box-a")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000001", make_files({"m": 8}, 20))
    expect_ok(o41_api.commit(a.artifact, a.token, str(up.upload_id)), "VER-4", "first commit")
    for _ in range(2):
        expect_error(o41_api.commit(a.artifact, a.token, str(up.upload_id)), 409,
                     "version_exists", "VER-2.a", "a second commit of the same upload")
