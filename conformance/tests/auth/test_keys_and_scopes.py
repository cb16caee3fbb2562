"""Keys and scopes (AUTH-1..3): checked before step 1, enforced by every endpoint."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal

_SPEC = [{"name": "m", "size": 1, "sha256": sha256(b"x")}]

ENDPOINTS: dict[str, Callable[[Client, str], Reply]] = {
    "open": lambda c, a: c.open(a, "latest", None, "box-x"),
    "write": lambda c, a: c.write(a, "tk_whatever", "step-00000001", _SPEC),
    "commit": lambda c, a: c.commit(a, "tk_whatever", "up_whatever"),
    "delete": lambda c, a: c.delete(a, "tk_whatever", "step-00000001"),
    "versions-read": lambda c, a: c.read(a),
    "versions-list": lambda c, a: c.list(a),
    "artifacts-read": lambda c, a: c.artifact(a),
    "usage-read": lambda c, a: c.usage(a),
}
CREDENTIALS = {
    "no-header": {},
    "unknown-key": {"Authorization": "Bearer ak_not_a_key_of_this_target"},
    "not-bearer": {"Authorization": "Basic YWtfbG9jYWw6"},
    "empty-bearer": {"Authorization": "Bearer "},
}


@pytest.mark.rule("AUTH-1.a", "AUTH-1.b")
@pytest.mark.parametrize("credential", sorted(CREDENTIALS))
@pytest.mark.parametrize(
    "endpoint",
    [pytest.param(e, marks=pytest.mark.usage) if e == "usage-read" else e for e in ENDPOINTS],
)
def test_api_unauthenticated_without_valid_key(
    o41_env: Env, o41_api: Client, endpoint: str, credential: str
) -> None:
    name = o41_env.artifact("auth1")
    client = o41_api.with_key(None).with_headers(CREDENTIALS[credential])
    reply = ENDPOINTS[endpoint](client, name)
    expect_error(reply, 401, "unauthenticated", "AUTH-1", f"{endpoint} with {credential}")


@pytest.mark.rule("AUTH-1.a", "FENCE-4.a")
def test_open_without_key_creates_nothing(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("auth1n")
    expect_error(o41_api.with_key(None).open(name), 401, "unauthenticated", "AUTH-1", "open")
    expect_error(o41_api.artifact(name), 404, "not_found", "AUTH-1", "artifact after a 401")


@pytest.mark.rule("AUTH-2.a", "AUTH-2.b", "FENCE-4.a")
@pytest.mark.read_key
def test_open_forbidden_with_read_only_key(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    name = o41_env.artifact("auth2")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 10}))
    before = expect_ok(o41_api.artifact(name), "READ-1", "artifact")
    for resume in ("latest", None):
        expect_error(
            o41_reader.open(name, resume, None, "box-r"),
            403,
            "forbidden",
            "AUTH-2",
            f"open (resume={resume}) with a read-only key",
        )
    after = expect_ok(o41_api.artifact(name), "READ-1", "artifact")
    check_equal(
        (after["epoch"], after["holder"]),
        (before["epoch"], before["holder"]),
        "AUTH-2",
        "epoch and holder after forbidden opens",
    )
    commit_ok(o41_api, a, "step-00000002", make_files({"m": 10}), rule="FENCE-4")


@pytest.mark.rule("AUTH-2.a", "AUTH-2.b")
@pytest.mark.read_key
def test_open_forbidden_with_read_only_key_creates_nothing(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    name = o41_env.artifact("auth2n")
    expect_error(o41_reader.open(name), 403, "forbidden", "AUTH-2", "open with a read key")
    expect_error(o41_api.artifact(name), 404, "not_found", "AUTH-2", "artifact after a 403")


@pytest.mark.rule("AUTH-3.a")
@pytest.mark.read_key
def test_read_key_reads_but_cannot_write(o41_env: Env, o41_api: Client, o41_reader: Client) -> None:
    name = o41_env.artifact("auth3")
    a = open_box(o41_api, name, "box-a")
    files = make_files({"m": 1000})
    commit_ok(o41_api, a, "step-00000001", files)
    body = expect_ok(o41_reader.read(name, urls=True), "AUTH-3", "read with a read key")
    check_equal(download(o41_reader, body), files, "AUTH-3", "bytes read with a read key")
    expect_ok(o41_reader.list(name), "AUTH-3", "list with a read key")
    expect_ok(o41_reader.artifact(name), "AUTH-3", "artifacts/read with a read key")
    up = start_upload(o41_api, name, a.token, "step-00000002", make_files({"m": 5}))
    expect_error(
        o41_reader.write(name, a.token, "step-00000003", _SPEC),
        403,
        "forbidden",
        "AUTH-3",
        "write with a read key and a valid token",
    )
    expect_error(
        o41_reader.commit(name, a.token, str(up.upload_id)),
        403,
        "forbidden",
        "AUTH-3",
        "commit with a read key and a valid token",
    )
    check_equal(
        expect_ok(o41_api.artifact(name), "READ-1", "artifact")["latest"],
        "step-00000001",
        "AUTH-3",
        "latest after forbidden commits",
    )


@pytest.mark.rule("AUTH-3.b", "AUTH-3.c")
@pytest.mark.scoped_key
def test_scoped_key_confined_to_its_prefixes(o41_env: Env, o41_api: Client) -> None:
    scoped = o41_env.client(key=o41_env.scoped_key, trail=o41_api.trail)
    writable, hidden = o41_env.scoped_artifact("a"), o41_env.artifact("x-a")
    commit_ok(o41_api, open_box(o41_api, hidden, "box-s"), "step-00000001", make_files({"m": 4}))
    w = open_box(scoped, writable, "box-w", rule="AUTH-3")
    commit_ok(scoped, w, "step-00000001", make_files({"m": 4}), rule="AUTH-3")
    expect_ok(scoped.read(writable), "AUTH-3", "read of a writable prefix (write implies read)")
    for reply in (
        scoped.read(hidden),
        scoped.list(hidden),
        scoped.artifact(hidden),
        scoped.open(hidden),
    ):
        expect_error(reply, 403, "forbidden", "AUTH-3", f"{reply.target} outside the scopes")


@pytest.mark.rule("AUTH-3.b", "AUTH-3.d")
@pytest.mark.scoped_key
@pytest.mark.scoped_read
@pytest.mark.scoped_key
@pytest.mark.usage
def test_usage_confined_to_readable_artifacts(o41_env: Env, o41_api: Client) -> None:
    scoped = o41_env.client(key=o41_env.scoped_key, trail=o41_api.trail)
    readable, hidden = o41_env.scoped_artifact("u"), o41_env.artifact("x-u")
    for name in (readable, hidden):
        commit_ok(o41_api, open_box(o41_api, name, "box-s"), "step-00000001", make_files({"m": 4}))
    expect_ok(scoped.usage(readable), "AUTH-3", "usage of a readable artifact")
    expect_error(scoped.usage(hidden), 403, "forbidden", "AUTH-3", "usage outside the scopes")
    rows = expect_ok(scoped.usage(), "AUTH-3", "usage without an artifact")["transfers"]
    seen = {r["artifact"] for r in rows}
    check(readable in seen, "USAGE-1", f"{readable} missing from the key's usage")
    assert o41_env.scoped is not None
    leaked = sorted(a for a in seen if not o41_env.scoped.covers(a))
    check_equal(leaked, [], "AUTH-3", "artifacts in usage the key cannot read")
