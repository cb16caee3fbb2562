"""FENCE-2 whatever kind the newer open is. An artifact opened before and still empty can be
opened again at ``latest``, fresh (``resume: null``) or as the target of a fork; each is a
successful open, so each fences the box that opened it before: that box's writes and
commits (of an upload it had fully PUT before) get 409 ``fenced`` and its version never
shows. A server that fences only on the path it tests most lets the older box write on."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_invisible
from conformance.probes import expect_writer_alive
from conformance.rules import check_equal

V1, V2, V5 = "step-00000001", "step-00000002", "step-00000005"


@pytest.mark.rule("FENCE-2.a", "FENCE-2.b")
@pytest.mark.parametrize("kind", ["latest", "fresh", "fork"])
def test_any_newer_open_of_an_empty_artifact_fences_the_box_before_it(
    o41_env: Env, o41_api: Client, kind: str
) -> None:
    source = open_box(o41_api, o41_env.artifact(f"fence-kind-src-{kind}"), "box-s")
    commit_ok(o41_api, source, V1, make_files({"m": 24}, 71), "FENCE-2.a")
    name = o41_env.artifact(f"fence-kind-{kind}")
    old = open_box(o41_api, name, "box-old")
    staged = start_upload(o41_api, name, old.token, V2, make_files({"m": 16}, 72))
    upload = str(expect_ok(staged.write, "VER-4.a", "the old box's write")["upload"])
    resume = {"latest": "latest", "fresh": None, "fork": f"o41://{source.artifact}/{V1}"}[kind]
    new = open_box(o41_api, name, "box-new", resume=resume, rule="FENCE-1.a")
    specs = [f.as_json() for f in file_specs(make_files({"n": 8}, 73))]
    expect_error(o41_api.write(name, old.token, V5, specs), 409, "fenced", "FENCE-2.a",
                 f"a write by the box opened before a {kind} open")
    expect_error(o41_api.commit(name, old.token, upload), 409, "fenced", "FENCE-2.b",
                 f"a commit by the box opened before a {kind} open")
    expect_invisible(o41_api, name, V2, "FENCE-2.b", f"the fenced commit after a {kind} open")
    expect_writer_alive(o41_api, new, V5, "FENCE-2.a", f"the box of the {kind} open")


@pytest.mark.rule("FENCE-2.b")
def test_a_fenced_token_cannot_commit_the_newest_holders_upload(
    o41_env: Env, o41_api: Client
) -> None:
    """A commit is fenced by its token, not only by its upload: the box opened before gets
    409 ``fenced`` committing the upload the newest box started (its epoch is newest), the
    version does not show, and the newest box then commits that upload itself."""
    name = o41_env.artifact("fence-token-not-upload")
    old = open_box(o41_api, name, "box-old")
    commit_ok(o41_api, old, V1, make_files({"m": 12}, 74), "FENCE-2.b")
    new = open_box(o41_api, name, "box-new", rule="FENCE-1.a")
    staged = start_upload(o41_api, name, new.token, V2, make_files({"m": 16}, 75))
    upload = str(expect_ok(staged.write, "VER-4.a", "the newest box's write")["upload"])
    expect_error(o41_api.commit(name, old.token, upload), 409, "fenced", "FENCE-2.b",
                 "the fenced box's commit of the newest box's upload")
    expect_invisible(o41_api, name, V2, "FENCE-2.b", "the refused commit")
    version = expect_ok(o41_api.commit(name, new.token, upload), "FENCE-2.b",
                        "the newest box's commit of its own upload")
    check_equal(version.get("version"), V2, "FENCE-2.b", "the version the newest box committed")
