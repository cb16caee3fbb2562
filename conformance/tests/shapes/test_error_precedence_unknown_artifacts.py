"""400 before 404 (Small points, VER-6.f) when the artifact named does not exist: a write,
commit or delete naming a missing artifact with a token of another artifact is 400 (the
token), not 404 (the artifact); a read of a malformed version of a missing artifact is 400
(the name), not 404. None of them creates the artifact."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.checks import expect_error
from conformance.client import Client
from conformance.env import Env

V1 = "step-00000001"


@pytest.mark.rule("VER-6.f", "FENCE-2.e")
def test_a_write_commit_or_delete_naming_a_missing_artifact_with_a_foreign_token_is_400(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("prec-missing-own"), "box-a")
    commit_ok(o41_api, box, V1, make_files({"m": 8}, 180), "VER-6.f")
    up = o41_api.write(box.artifact, box.token, "step-00000002",
                       [{"name": "m", "size": 1, "sha256": sha256(b"m")}])
    upload = str(up.body.get("upload")) if up.ok else "up-unknown-0011"
    missing = o41_env.artifact("prec-missing")
    cases = {
        "write": o41_api.write(missing, box.token, "step-00000002",
                               [{"name": "m", "size": 1, "sha256": sha256(b"m")}]),
        "commit": o41_api.commit(missing, box.token, upload),
        "delete": o41_api.delete(missing, box.token, V1),
    }
    for what, reply in cases.items():
        expect_error(reply, 400, "invalid_argument", "VER-6.f",
                     f"{what} naming a missing artifact with another artifact's token")
        expect_error(o41_api.artifact(missing), 404, "not_found", "VER-6.f",
                     f"artifacts/read of the missing artifact after the {what}")


@pytest.mark.rule("VER-6.f", "VER-1.a")
@pytest.mark.parametrize("version", ["step-1", "step-0000000a", "latest-1"])
def test_a_read_of_a_malformed_version_of_a_missing_artifact_is_400(
    o41_env: Env, o41_api: Client, version: str
) -> None:
    missing = o41_env.artifact("prec-missing-read")
    for urls in (False, True):
        expect_error(o41_api.read(missing, version, urls=urls), 400, "invalid_argument",
                     "VER-1.a", f"read of {version!r} of a missing artifact (urls={urls})")
    expect_error(o41_api.artifact(missing), 404, "not_found", "VER-1.a",
                 "artifacts/read of the missing artifact after the reads")
