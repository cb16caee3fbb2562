"""Keys against an artifact that exists and holds versions, with a live token and upload: a
server that answers a bad key from some other key's rights only shows it there. Each test
here killed a mutant of ``conformance.mutants`` that the rest of the suite missed."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.rules import check

TINY = {"m": 64}


@dataclass
class Held:
    """An artifact with two versions, its live token and a started upload."""

    artifact: str
    token: str
    upload: str
    specs: list[dict[str, Any]]


def _held(env: Env, api: Client, slug: str, artifact: str | None = None) -> Held:
    name = artifact or env.artifact(slug)
    box = open_box(api, name, env.holder("owner"))
    commit_ok(api, box, "step-00000001", make_files(TINY))
    commit_ok(api, box, "step-00000002", make_files(TINY, seed=1))
    files = make_files(TINY, seed=2)
    up = start_upload(api, name, box.token, "step-00000003", files)
    specs = [f.as_json() for f in file_specs(files)]
    return Held(name, box.token, str(up.upload_id), specs)


def _endpoints(h: Held) -> dict[str, Callable[[Client], Reply]]:
    return {
        "open": lambda c: c.open(h.artifact, "latest", None, "intruder"),
        "write": lambda c: c.write(h.artifact, h.token, "step-00000009", h.specs),
        "commit": lambda c: c.commit(h.artifact, h.token, h.upload),
        "delete": lambda c: c.delete(h.artifact, h.token, "step-00000001"),
        "versions-read": lambda c: c.read(h.artifact),
        "versions-read-named": lambda c: c.read(h.artifact, "step-00000001", urls=True),
        "versions-read-no-version": lambda c: c.read(h.artifact, None),
        "versions-list": lambda c: c.list(h.artifact),
        "artifacts-read": lambda c: c.artifact(h.artifact),
        "usage-read": lambda c: c.usage(h.artifact),
    }


def _bad_credentials(key: str) -> dict[str, dict[str, str]]:
    return {
        "no-header": {},
        "token-scheme": {"Authorization": f"Token {key}"},
        "bare-key": {"Authorization": key},
        "basic-scheme": {"Authorization": f"Basic {key}"},
        "unknown-key": {"Authorization": f"Bearer ak_{secrets.token_hex(12)}"},
    }


@pytest.mark.rule("AUTH-1.a")
def test_bad_credentials_rejected_on_a_held_artifact(o41_env: Env, o41_api: Client) -> None:
    """AUTH-1.a/b: every endpoint, on an artifact with versions, a live token and upload."""
    held = _held(o41_env, o41_api, "auth-held")
    usage = o41_env.capability("usage")[0]
    for cred, headers in _bad_credentials(str(o41_env.key)).items():
        client = o41_api.with_key(None).with_headers(headers)
        for endpoint, call in _endpoints(held).items():
            if endpoint == "usage-read" and not usage:
                continue
            expect_error(call(client), 401, "unauthenticated", "AUTH-1", f"{endpoint}, {cred}")
    state = expect_ok(o41_api.list(held.artifact), "AUTH-1", "versions/list with the key")
    check(len(state["versions"]) == 2, "AUTH-1", f"versions after the attempts: {state}")


@pytest.mark.rule("AUTH-3.a")
@pytest.mark.read_key
def test_read_key_reads_everything_of_a_held_artifact(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    """AUTH-3.a: the read key reads, lists, reads usage; write and commit are 403."""
    held = _held(o41_env, o41_api, "auth-reader")
    for endpoint, call in _endpoints(held).items():
        if endpoint in ("open", "write", "commit", "delete"):
            expect_error(call(o41_reader), 403, "forbidden", "AUTH-3", f"{endpoint}, read key")
        elif endpoint != "usage-read" or o41_env.capability("usage")[0]:
            expect_ok(call(o41_reader), "AUTH-3", f"{endpoint} with the read key")


def _scoped(env: Env, slug: str) -> tuple[str, str]:
    """The scoped key and a fresh artifact name under its write prefix (old and new Env)."""
    key = getattr(env, "scoped_key", None)
    if not key:
        pytest.skip("optional capability: needs a scoped key (--scoped-key KEY=PREFIX)")
    maker = getattr(env, "scoped_artifact", None)
    name = maker(slug) if callable(maker) else f"{env.prefix}/w-{slug}-{secrets.token_hex(3)}"
    return str(key), name


@pytest.mark.rule("AUTH-3.b")
@pytest.mark.scoped_key
def test_scoped_key_refused_outside_its_prefixes_on_a_held_artifact(
    o41_env: Env, o41_api: Client
) -> None:
    """AUTH-3.b: every endpoint is 403 for a held artifact outside the key's prefixes."""
    key, _ = _scoped(o41_env, "unused")
    held = _held(o41_env, o41_api, "auth-outside")
    scoped = o41_api.with_key(key)
    for endpoint, call in _endpoints(held).items():
        if endpoint == "usage-read" and not o41_env.capability("usage")[0]:
            continue
        expect_error(call(scoped), 403, "forbidden", "AUTH-3", f"{endpoint}, scoped key")


@pytest.mark.rule("AUTH-3.c")
@pytest.mark.scoped_key
def test_scoped_writer_reads_its_own_after_a_refusal(o41_env: Env, o41_api: Client) -> None:
    """AUTH-3.c/d: a scoped key, once refused elsewhere, still reads everything of its own
    artifact, and its usage without ``artifact`` names none of the run's other artifacts."""
    key, name = _scoped(o41_env, "own")
    scoped = o41_api.with_key(key)
    outside = _held(o41_env, o41_api, "auth-foreign")
    expect_error(scoped.open(outside.artifact), 403, "forbidden", "AUTH-3", "open outside")
    held = _held(o41_env, scoped, "own", artifact=name)
    for endpoint, call in _endpoints(held).items():
        if endpoint in ("open", "write", "commit", "delete"):
            continue
        if endpoint == "usage-read" and not o41_env.capability("usage")[0]:
            continue
        expect_ok(call(scoped), "AUTH-3", f"{endpoint} of its own artifact")
    if not o41_env.capability("usage")[0]:
        return
    latest = expect_ok(o41_api.read(outside.artifact, urls=True), "AUTH-3", "outside latest")
    for f in latest["files"]:
        o41_api.fetch(f["url"])
    usage = expect_ok(scoped.usage(), "AUTH-3", "usage without artifact, scoped key")
    named = {row.get("artifact") for row in usage.get("transfers") or []}
    check(outside.artifact not in named, "AUTH-3", f"usage names {sorted(map(str, named))}")
    check(name in named, "AUTH-3", f"usage misses its own artifact: {sorted(map(str, named))}")
