"""API-1.f where a shallow test does not look: a missing or mistyped field while there is
something it could be mistaken for (a commit without ``upload`` while an upload waits, a
string ``place`` that names a real location, ``resume`` or ``version`` spelled
``LATEST``), names with a stray slash, and reads without ``artifact``. Each gets 400
``invalid_argument`` and changes nothing: no epoch bump, nobody fenced, nothing committed."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.probes import expect_invisible
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot
from conformance.rules import check_equal


@pytest.mark.rule("API-1.f", "VER-4.c")
def test_commit_without_upload_invalid_while_an_upload_waits(
    o41_env: Env, o41_api: Client
) -> None:
    a = open_box(o41_api, o41_env.artifact("api1f-commit"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 1))
    up = start_upload(o41_api, a.artifact, a.token, "step-00000002", make_files({"m": 8}, 2))
    for body in ({"artifact": a.artifact, "token": a.token},
                 {"artifact": a.artifact, "token": a.token, "upload": None},
                 {"artifact": a.artifact, "token": a.token, "upload": 7}):
        reply = o41_api.call("POST", "/versions/commit", body=body)
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"commit of {body}")
        expect_invisible(o41_api, a.artifact, "step-00000002", "API-1.f", "after that commit")
    expect_ok(o41_api.commit(a.artifact, a.token, str(up.upload_id)), "VER-4", "the real commit")


@pytest.mark.rule("API-1.f", "AUTH-2.b")
@pytest.mark.parametrize("place", ["aws/us-east-1", "gcp/europe-west4", "lambda/us-east-1"])
def test_open_with_a_string_place_invalid_and_changes_nothing(
    o41_env: Env, o41_api: Client, place: str
) -> None:
    """The contract types ``place`` as an object or null: a string is a mistyped field,
    even one that reads as a real location."""
    a = open_box(o41_api, o41_env.artifact("api1f-place"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 3))
    before = snapshot(o41_api, a.artifact)
    for resume in ("latest", None):
        reply = o41_api.call("POST", "/artifacts/open", body={
            "artifact": a.artifact, "resume": resume, "place": place, "holder": "box-s"})
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"open with place {place!r}")
    expect_unchanged(o41_api, a.artifact, before, "API-1.f", "the refused opens")
    new = o41_env.artifact("api1f-place-new")
    reply = o41_api.call("POST", "/artifacts/open", body={
        "artifact": new, "resume": "latest", "place": place})
    expect_error(reply, 400, "invalid_argument", "API-1.f", f"open of a new artifact at {place!r}")
    expect_error(o41_api.artifact(new), 404, "not_found", "API-1.f", "after that refusal")
    expect_writer_alive(o41_api, a, "step-00000002", "API-1.f", "after the refused opens")


RESUMES: list[Any] = ["LATEST", "Latest", " latest", "latest/", 5, True, {"version": "latest"},
                      ["latest"]]


@pytest.mark.rule("API-1.f")
def test_open_with_resume_misspelled_or_mistyped_invalid(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("api1f-resume"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 4))
    before = snapshot(o41_api, a.artifact)
    for resume in RESUMES:
        reply = o41_api.call("POST", "/artifacts/open", body={
            "artifact": a.artifact, "resume": resume, "place": None, "holder": "box-r"})
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"open with resume {resume!r}")
    expect_unchanged(o41_api, a.artifact, before, "API-1.f", "the refused opens")
    expect_writer_alive(o41_api, a, "step-00000002", "API-1.f", "after the refused opens")


@pytest.mark.rule("VER-1.a")
@pytest.mark.parametrize("version", ["LATEST", "Latest", "latest/", "step-00000001/"])
def test_read_of_latest_misspelled_invalid(o41_env: Env, o41_api: Client, version: str) -> None:
    a = open_box(o41_api, o41_env.artifact("v1a-latest"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 5))
    for urls in (False, True):
        expect_error(o41_api.read(a.artifact, version, urls=urls), 400, "invalid_argument",
                     "VER-1.a", f"read with version={version!r} (urls={urls})")


@pytest.mark.rule("API-1.f")
def test_names_with_a_stray_slash_and_reads_without_artifact_invalid(
    o41_env: Env, o41_api: Client
) -> None:
    a = open_box(o41_api, o41_env.artifact("api1f-slash"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8}, 6))
    for name in (a.artifact + "/", "/" + a.artifact, a.artifact.replace("/", "//")):
        for reply in (o41_api.read(name), o41_api.list(name), o41_api.artifact(name)):
            expect_error(reply, 400, "invalid_argument", "API-1.f", reply.line())
        reply = o41_api.open(name, "latest", None, "box-s")
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"open of {name!r}")
    for path in ("/versions/read", "/versions/list", "/artifacts/read"):
        reply = o41_api.call("GET", path, params={"version": "latest"})
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"{path} without artifact")
    # ``artifact=`` given empty is a malformed name, not an absent one (for usage/read the
    # absent one means "everything the key can read")
    paths = ["/versions/read", "/versions/list", "/artifacts/read"]
    if o41_env.capability("usage")[0]:
        paths.append("/usage/read")
    for path in paths:
        reply = o41_api.call("GET", path, params={"artifact": ""})
        expect_error(reply, 400, "invalid_argument", "API-1.f", f"{path}?artifact= (empty)")
    state = expect_ok(o41_api.artifact(a.artifact), "API-1.e", "artifacts/read")
    check_equal(state.get("epoch"), a.epoch, "API-1.f", "epoch after the refused opens")


@pytest.mark.rule("API-1.c")
def test_read_without_urls_parameter_gives_no_urls(o41_env: Env, o41_api: Client) -> None:
    """``url`` and ``urls_expire_at`` are there exactly when the reply carries URLs: a read
    that does not ask (no ``urls`` at all) gets none, like ``urls=0``."""
    a = open_box(o41_api, o41_env.artifact("api1c-nourls"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 8, "n": 3}, 7))
    for params in ({"artifact": a.artifact}, {"artifact": a.artifact, "version": "latest"},
                   {"artifact": a.artifact, "version": "step-00000001"},
                   {"artifact": a.artifact, "place": str(o41_env.topology.locations[0])}):
        body = expect_ok(o41_api.call("GET", "/versions/read", params=params), "API-1.c", "read")
        with_url = [f.get("name") for f in body.get("files") or [] if "url" in f]
        check_equal((with_url, "urls_expire_at" in body), ([], False), "API-1.c",
                    f"files with a url, and urls_expire_at, in a read of {params}")
