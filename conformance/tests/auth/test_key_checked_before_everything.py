"""AUTH-1 before everything else: a call without a valid key gets 401 ``unauthenticated``
whatever else is wrong with it (a malformed name or body, an unknown artifact or version, a
stale token), and ``usage/read`` of everything is no exception: an unknown key learns
nothing, not even an empty report."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.probes import expect_invisible

CREDENTIALS = {
    "no-header": {},
    "unknown-key": {"Authorization": "Bearer ak_not_a_key_of_this_target"},
}


def _broken(env: Env, artifact: str, token: str) -> dict[str, Callable[[Client], Reply]]:
    """Requests a writer would get 400 or 404 for."""
    spec = [{"name": "../m", "size": 1, "sha256": "0" * 64}]
    return {
        "open of a malformed name": lambda c: c.open(f"{env.prefix}/a b", "latest", None, "x"),
        "open with a malformed body": lambda c: c.call("POST", "/artifacts/open", body=[1]),
        "fork from a missing source": lambda c: c.open(
            env.artifact("a1p-new"), f"o41://{env.artifact('a1p-none')}/step-00000001"),
        "write of a bad file name": lambda c: c.write(artifact, token, "step-00000009", spec),
        "write with an unknown token": lambda c: c.write(artifact, "tk_x", "step-00000009", spec),
        "commit of an unknown upload": lambda c: c.commit(artifact, token, "up_none"),
        "write of a size over any limit": lambda c: c.write(
            artifact, token, "step-00000009", [{"name": "m", "size": 10**15, "sha256": "0" * 64}]),
        "read of a missing version": lambda c: c.read(artifact, "step-00000077"),
        "read of a malformed version": lambda c: c.read(artifact, "step-7"),
        "read of an unknown artifact": lambda c: c.read(env.artifact("a1p-none")),
        "list of a malformed name": lambda c: c.list(f"{env.prefix}/a/b"),
        "artifacts/read of an unknown artifact": lambda c: c.artifact(env.artifact("a1p-none")),
    }


def _a_version_and_a_keyless_client(
    env: Env, api: Client, slug: str, credential: str
) -> tuple[Box, Client]:
    """A box that committed one version, and a client sending ``credential`` instead of a
    key."""
    a = open_box(api, env.artifact(slug), "box-a")
    commit_ok(api, a, "step-00000001", make_files({"m": 5}))
    return a, api.with_key(None).with_headers(CREDENTIALS[credential])


@pytest.mark.rule("AUTH-1.a", "AUTH-1.b")
@pytest.mark.parametrize("credential", sorted(CREDENTIALS))
def test_unauthenticated_before_any_other_error(
    o41_env: Env, o41_api: Client, credential: str
) -> None:
    a, client = _a_version_and_a_keyless_client(o41_env, o41_api, "a1p", credential)
    for what, send in _broken(o41_env, a.artifact, a.token).items():
        expect_error(send(client), 401, "unauthenticated", "AUTH-1", f"{what}, {credential}")


@pytest.mark.rule("AUTH-1.a", "AUTH-1.b")
@pytest.mark.usage
@pytest.mark.parametrize("credential", sorted(CREDENTIALS))
def test_usage_of_everything_unauthenticated_without_valid_key(
    o41_env: Env, o41_api: Client, credential: str
) -> None:
    """With traffic on the target, so that a report of nothing would be a lie too."""
    a, client = _a_version_and_a_keyless_client(o41_env, o41_api, "a1u", credential)
    expect_error(client.usage(), 401, "unauthenticated", "AUTH-1",
                 f"usage/read without artifact, {credential}")
    expect_error(client.usage(a.artifact), 401, "unauthenticated", "AUTH-1",
                 f"usage/read of {a.artifact}, {credential}")


@pytest.mark.rule("AUTH-3.a")
@pytest.mark.read_key
def test_read_key_write_and_commit_forbidden_whatever_the_token_or_upload(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    """The scope decides before the token or upload is looked at: a read-only key gets 403
    with a live token, an unknown one, another artifact's, and for any upload id."""
    a = open_box(o41_api, o41_env.artifact("a3a-order"), "box-a")
    b = open_box(o41_api, o41_env.artifact("a3a-other"), "box-b")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 5}))
    up = start_upload(o41_api, a.artifact, a.token, "step-00000002", make_files({"m": 5}, 2))
    spec = [f.as_json() for f in file_specs(make_files({"m": 5}, 3))]
    for what, token in (("its live token", a.token), ("an unknown token", "tk_not_issued"),
                        ("another artifact's token", b.token)):
        expect_error(o41_reader.write(a.artifact, token, "step-00000003", spec), 403,
                     "forbidden", "AUTH-3.a", f"write by the read key with {what}")
        for upload in (str(up.upload_id), "up_not_issued"):
            expect_error(o41_reader.commit(a.artifact, token, upload), 403, "forbidden",
                         "AUTH-3.a", f"commit by the read key with {what}, upload {upload}")
    expect_invisible(o41_api, a.artifact, "step-00000002", "AUTH-3.a", "after the refusals")


@pytest.mark.rule("AUTH-3.b")
@pytest.mark.scoped_key
def test_scoped_key_forbidden_outside_its_prefixes_for_artifacts_that_do_not_exist(
    o41_env: Env, o41_api: Client, o41_scoped: Client
) -> None:
    """403, not 404: whether an artifact outside the key's prefixes exists is not the key's
    to learn."""
    held = open_box(o41_api, o41_env.artifact("a3b-held"), "box-a")
    commit_ok(o41_api, held, "step-00000001", make_files({"m": 5}))
    missing = o41_env.artifact("a3b-never")
    for name, version in ((missing, "latest"), (missing, "step-00000001"),
                          (held.artifact, "step-00000042")):
        for reply in (o41_scoped.read(name, version), o41_scoped.read(name, version, urls=True),
                      o41_scoped.list(name), o41_scoped.artifact(name)):
            expect_error(reply, 403, "forbidden", "AUTH-3.b", f"{reply.line()}")
    if o41_env.capability("usage")[0]:
        expect_error(o41_scoped.usage(missing), 403, "forbidden", "AUTH-3.b", "usage of it")
