"""Keys at their edges (AUTH-1, AUTH-3): every endpoint against an artifact that exists, with
a real token and a real upload, so only the key decides; keys one character off; artifact
names one character outside a key's prefix."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.model import UNKNOWN_PLACE
from conformance.names import names_just_outside
from conformance.names import scoped_name
from conformance.names import scoped_prefixes
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check
from conformance.rules import check_equal

Call = Callable[[Client], Reply]


def _calls(box: Box, upload: str) -> dict[str, Call]:
    """Every endpoint, aimed at an artifact with versions, with a valid token and upload."""
    name = box.artifact
    specs = [f.as_json() for f in file_specs(make_files({"k": 5}))]
    return {
        "open": lambda c: c.open(name, "latest", None, "box-x"),
        "write": lambda c: c.write(name, box.token, "step-00000050", specs),
        "commit": lambda c: c.commit(name, box.token, upload),
        "delete": lambda c: c.delete(name, box.token, "step-00000001"),
        "versions-read": lambda c: c.read(name, "step-00000001", urls=True),
        "versions-read-default": lambda c: c.read(name, None),
        "versions-list": lambda c: c.list(name),
        "artifacts-read": lambda c: c.artifact(name),
        "usage-read": lambda c: c.usage(name),
    }


def _held(api: Client, name: str, versions: int = 3) -> tuple[Box, str]:
    box = open_box(api, name, "box-a")
    for step in range(1, versions + 1):
        commit_ok(api, box, f"step-{step:08d}", make_files({"m": 40}, step))
    up = start_upload(api, name, box.token, "step-00000010", make_files({"m": 40}, 10))
    return box, str(up.upload_id)


def _refused_everywhere(
    api: Client,
    client: Client,
    box: Box,
    upload: str,
    status: int,
    code: str,
    clause: str,
    who: str,
) -> None:
    before = snapshot(api, box.artifact)
    for endpoint, call in _calls(box, upload).items():
        expect_error(call(client), status, code, clause, f"{endpoint} with {who}")
    expect_unchanged(api, box.artifact, before, clause, f"calls with {who}")


@pytest.mark.rule("AUTH-1.a")
def test_malformed_authorization_refused_on_every_endpoint(o41_env: Env, o41_api: Client) -> None:
    key = o41_env.key or ""
    headers = {
        "none": {},
        "basic": {"Authorization": f"Basic {key}"},
        "bare-key": {"Authorization": key},
        "bearer-only": {"Authorization": "Bearer"},
        "token-scheme": {"Authorization": f"Token {key}"},
        # the key and then more: not ``Bearer <key>``, though its second word is the key
        "bearer-two-words": {"Authorization": f"Bearer {key} {key}"},
    }
    box, upload = _held(o41_api, o41_env.artifact("a1a"))
    for who, hdrs in headers.items():
        client = o41_api.with_key(None).with_headers(hdrs)
        _refused_everywhere(o41_api, client, box, upload, 401, "unauthenticated", "AUTH-1.a", who)
    expect_ok(o41_api.commit(box.artifact, box.token, upload), "AUTH-1.a", "the upload after")


@pytest.mark.rule("AUTH-1.b")
def test_keys_one_character_off_refused_on_every_endpoint(o41_env: Env, o41_api: Client) -> None:
    keys = [k for k in (o41_env.key, o41_env.read_key, o41_env.scoped_key) if k]
    wrong = {f"{k}x" for k in keys} | {k[:-1] for k in keys} | {k.upper() for k in keys}
    wrong |= {k[:-1] + ("a" if k[-1] != "a" else "b") for k in keys}
    box, upload = _held(o41_api, o41_env.artifact("a1b"))
    for bad in sorted(wrong - set(keys)):
        client = o41_api.with_key(bad)
        _refused_everywhere(o41_api, client, box, upload, 401, "unauthenticated", "AUTH-1.b", bad)
    expect_ok(o41_api.commit(box.artifact, box.token, upload), "AUTH-1.b", "the upload after")


def _reads_everything(api: Client, client: Client, box: Box, clause: str, who: str) -> None:
    name = box.artifact
    for version in ("step-00000001", "latest", None):
        body = expect_ok(client.read(name, version, urls=True), clause, f"read {version}, {who}")
        check_equal(download(client, body)["m"][:1] is not None, True, clause, "download")
    listed = expect_ok(client.list(name), clause, f"list with {who}")["versions"]
    check_equal(len(listed), 3, clause, f"versions listed for {who}")
    check_equal(
        expect_ok(client.artifact(name), clause, who)["latest"], "step-00000003", clause, who
    )
    expect_ok(client.usage(name), clause, f"usage of the artifact with {who}")


@pytest.mark.rule("AUTH-3.a")
@pytest.mark.parametrize("who", ["read", "scoped"])
def test_read_access_reads_everything_and_writes_nothing(
    o41_env: Env, o41_api: Client, who: str
) -> None:
    key = o41_env.read_key if who == "read" else o41_env.scoped_key
    if not key:
        pytest.skip(f"optional capability: no {who} key (--read-key / --scoped-key)")
    name = o41_env.artifact("a3") if who == "read" else scoped_name(o41_env, "a3", "read")
    box, upload = _held(o41_api, name)
    client = o41_api.with_key(key)
    _reads_everything(o41_api, client, box, "AUTH-3.a", f"the {who} key")
    before = snapshot(o41_api, box.artifact)
    specs = [f.as_json() for f in file_specs(make_files({"k": 5}))]
    expect_error(
        client.write(box.artifact, box.token, "step-00000050", specs),
        403,
        "forbidden",
        "AUTH-3.a",
        f"write with the {who} key and a valid token",
    )
    expect_error(
        client.commit(box.artifact, box.token, upload),
        403,
        "forbidden",
        "AUTH-3.a",
        f"commit with the {who} key and a valid upload",
    )
    expect_unchanged(
        o41_api, box.artifact, before, "AUTH-3.a", f"refused writes with the {who} key"
    )
    expect_ok(o41_api.commit(box.artifact, box.token, upload), "AUTH-3.a", "the upload after")


@pytest.mark.rule("AUTH-3.b")
@pytest.mark.scoped_key
def test_names_just_outside_the_prefix_refused_on_every_endpoint(
    o41_env: Env, o41_api: Client, o41_scoped: Client
) -> None:
    # The key has written under its grant first: a grant matched loosely shows only once
    # the key is known to own names like the ones just outside.
    open_box(o41_scoped, scoped_name(o41_env, "a3b-own"), "box-own", rule="AUTH-3.b")
    for name in names_just_outside(o41_env, secrets.token_hex(3)):
        if o41_api.artifact(name).status != 404:
            continue  # an unsalted name left by an earlier run against this target
        box, upload = _held(o41_api, name, versions=1)
        _refused_everywhere(o41_api, o41_scoped, box, upload, 403, "forbidden", "AUTH-3.b", name)
        expect_ok(o41_api.commit(box.artifact, box.token, upload), "AUTH-3.b", "the upload after")


@pytest.mark.rule("AUTH-3.c")
@pytest.mark.scoped_key
def test_write_scope_reads_too(o41_env: Env, o41_api: Client, o41_scoped: Client) -> None:
    name = scoped_name(o41_env, "a3c")
    box = open_box(o41_scoped, name, "box-w", rule="AUTH-3.c")
    for step in (1, 2, 3):
        commit_ok(o41_scoped, box, f"step-{step:08d}", make_files({"m": 40}, step), rule="AUTH-3.c")
    _reads_everything(o41_api, o41_scoped, box, "AUTH-3.c", "the write-scoped key")


@pytest.mark.rule("AUTH-3.d")
@pytest.mark.scoped_key
def test_usage_without_artifact_shows_only_readable_artifacts(
    o41_env: Env, o41_api: Client, o41_scoped: Client
) -> None:
    write, read = scoped_prefixes(o41_env)
    names = {"w": scoped_name(o41_env, "u"), "x": o41_env.artifact("x-u")}
    names["W"] = names_just_outside(o41_env, secrets.token_hex(3))[0]
    if read:
        names["r"] = scoped_name(o41_env, "u", "read")
    for name in names.values():
        box = open_box(o41_api, name, "box-u", UNKNOWN_PLACE)
        commit_ok(o41_api, box, "step-00000001", make_files({"m": 1000}))
        body = expect_ok(o41_api.read(name, urls=True, place=UNKNOWN_PLACE), "READ-2.a", "read")
        download(o41_api, body)
    usage = expect_ok(o41_scoped.usage(), "AUTH-3.d", "usage without an artifact, scoped key")
    allowed = tuple(p for p in (write, read) if p)
    for part in ("transfers", "placements"):
        seen = {r.get("artifact") for r in usage.get(part) or []}
        check(
            {names[k] for k in ("w", "r") if k in names} <= seen,
            "AUTH-3.d",
            f"{part} of the scoped key lack its own artifacts",
        )
        leaked = sorted(a for a in seen if not str(a).startswith(allowed))
        check_equal(leaked, [], "AUTH-3.d", f"{part} of artifacts the key cannot read")
    for route, row in (usage.get("routes") or {}).items():
        for direction in ("write", "read"):
            listed = sum(
                r.get("bytes", 0)
                for r in usage.get("transfers") or []
                if r.get("route") == route and r.get("direction") == direction
            )
            check_equal(
                row.get(f"{direction}_bytes"),
                listed,
                "AUTH-3.d",
                f"{route} {direction} bytes counted beyond the transfers the key may see",
            )
