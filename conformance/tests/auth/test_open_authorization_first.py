"""AUTH-2.c: an open's key is checked before anything else about the open. A key that cannot
write the artifact gets 403 ``forbidden``, never the 409 or 404 a writer would get, so a
run learns at step 0 that it cannot write, and a reader learns nothing about the artifact
from an error it had no right to. Each refused open changes nothing (AUTH-2.b)."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.client import Client
from conformance.env import Env
from conformance.names import scoped_name
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot


def _refusals(env: Env, api: Client, target: str, src: str) -> list[tuple[str, str | None]]:
    """What a writer would get 409 / 404 / 400 for: a fork into ``target`` (which has a
    version), a fork from a missing source, a fresh open of ``target``, a malformed resume."""
    return [
        (f"a fork into an artifact with versions (from {src})", f"o41://{src}/step-00000001"),
        ("a fork from a missing version", f"o41://{src}/step-00000009"),
        ("a fork from a missing artifact", f"o41://{env.artifact('a2c-none')}/step-00000001"),
        ("a fresh open of an artifact with checkpoints", None),
        ("a malformed resume", "o41://not-a-source"),
    ]


@pytest.mark.rule("AUTH-2.c", "AUTH-2.b")
@pytest.mark.read_key
def test_read_key_open_forbidden_before_any_other_refusal(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    src = open_box(o41_api, o41_env.artifact("a2c-src"), "box-s")
    commit_ok(o41_api, src, "step-00000001", make_files({"m": 10}, 1))
    target = open_box(o41_api, o41_env.artifact("a2c-dst"), "box-t")
    commit_ok(o41_api, target, "step-00000001", make_files({"m": 10}, 2))
    before = snapshot(o41_api, target.artifact)
    for what, resume in _refusals(o41_env, o41_api, target.artifact, src.artifact):
        expect_error(o41_reader.open(target.artifact, resume, None, "box-r"), 403, "forbidden",
                     "AUTH-2.c", f"{what}, by a read-only key")
        expect_unchanged(o41_api, target.artifact, before, "AUTH-2.b", f"{what}, refused")
    missing = o41_env.artifact("a2c-new")
    expect_error(o41_reader.open(missing, f"o41://{src.artifact}/step-00000009", None, "box-r"),
                 403, "forbidden", "AUTH-2.c", "a fork from a missing version into a new name")
    expect_error(o41_api.artifact(missing), 404, "not_found", "AUTH-2.b", "after that refusal")
    expect_writer_alive(o41_api, target, "step-00000002", "AUTH-2.b", "after the refusals")


@pytest.mark.rule("AUTH-2.c", "AUTH-2.b")
@pytest.mark.scoped_key
def test_scoped_key_open_outside_its_prefix_forbidden_before_any_other_refusal(
    o41_env: Env, o41_api: Client, o41_scoped: Client
) -> None:
    """The scoped key may read and write its own source, but not the run's artifacts."""
    src_name = scoped_name(o41_env, "a2c-src")
    src = open_box(o41_api, src_name, "box-s")
    commit_ok(o41_api, src, "step-00000001", make_files({"m": 10}, 3))
    target = open_box(o41_api, o41_env.artifact("a2c-out"), "box-t")
    commit_ok(o41_api, target, "step-00000001", make_files({"m": 10}, 4))
    before = snapshot(o41_api, target.artifact)
    for what, resume in _refusals(o41_env, o41_api, target.artifact, src_name):
        expect_error(o41_scoped.open(target.artifact, resume, None, "box-x"), 403, "forbidden",
                     "AUTH-2.c", f"{what}, by a key scoped elsewhere")
        expect_unchanged(o41_api, target.artifact, before, "AUTH-2.b", f"{what}, refused")
    expect_writer_alive(o41_api, target, "step-00000002", "AUTH-2.b", "after the refusals")
