"""Retention (VER-7): the newest holder deletes a committed version that is not the latest;
it leaves read, list and the usage page's placements at once, its step is never reused,
URLs handed out before keep serving it, and every refused delete changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import Box
from conformance.actions import checkpoint
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Trail
from conformance.client import parse_time
from conformance.env import Env
from conformance.model import Place
from conformance.names import scoped_name
from conformance.probes import expect_served
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check
from conformance.rules import check_equal
from conformance.tests.read.test_url_lifetime import _sample

V = [f"step-{n:08d}" for n in range(0, 6)]


def _three(env: Env, api: Client, slug: str, place: Place | None = None,
           ) -> tuple[Box, list[dict[str, bytes]]]:
    box = open_box(api, env.artifact(slug), "box-a", place)
    files = [make_files({"model.bin": 300 + n, "opt/state.bin": 50}, 60 + n) for n in (1, 2, 3)]
    for n in (1, 2, 3):
        commit_ok(api, box, V[n], files[n - 1])
    return box, files


def _listed(api: Client, artifact: str, clause: str) -> list[str]:
    body = expect_ok(api.list(artifact), clause, f"list {artifact}")
    return [v.get("version") for v in body.get("versions") or []]


def _deleted(api: Client, box: Box, version: str, clause: str = "VER-7.a") -> dict[str, Any]:
    body = expect_ok(api.delete(box.artifact, box.token, version), clause, f"delete {version}")
    check_equal((body.get("artifact"), body.get("version")), (box.artifact, version), clause,
                "the delete's artifact and version")
    when = body.get("deleted_at")
    try:
        ok = parse_time(when) is not None
    except ValueError:
        ok = False
    check(ok, clause, f"the delete's deleted_at {when!r} is not a timestamp")
    return body


@pytest.mark.rule("VER-7.a", "READ-1.a")
def test_deleting_older_versions_takes_them_out_of_read_and_list_at_once(
    o41_env: Env, o41_api: Client
) -> None:
    box, files = _three(o41_env, o41_api, "delete")
    _deleted(o41_api, box, V[1])
    expect_error(o41_api.read(box.artifact, V[1]), 404, "not_found", "VER-7.a",
                 "read of the deleted version")
    expect_error(o41_api.read(box.artifact, V[1], urls=True), 404, "not_found", "VER-7.a",
                 "read with URLs of the deleted version")
    check_equal(_listed(o41_api, box.artifact, "VER-7.a"), [V[2], V[3]], "VER-7.a",
                "list after the first delete")
    state = expect_ok(o41_api.artifact(box.artifact), "VER-7.a", "artifacts/read")
    check_equal((state.get("latest"), state.get("versions")), (V[3], 2), "VER-7.a",
                "latest and count after the first delete")
    # Latest is still the highest step, however it is asked for, while two versions remain.
    for version in ("latest", None):
        read = expect_ok(o41_api.read(box.artifact, version), "READ-1.a", "read latest")
        check_equal(read.get("version"), V[3], "READ-1.a",
                    f"read of version={version} after deleting {V[1]}")
    fork = o41_env.artifact("delete-fork")
    expect_error(o41_api.open(fork, f"o41://{box.artifact}/{V[1]}", None, "box-f"), 404,
                 "not_found", "VER-7.a", "a fork from the deleted version")
    expect_error(o41_api.artifact(fork), 404, "not_found", "VER-7.a",
                 "the target of the refused fork")
    _deleted(o41_api, box, V[2])
    check_equal(_listed(o41_api, box.artifact, "VER-7.a"), [V[3]], "VER-7.a",
                "list after the second delete")
    latest = expect_ok(o41_api.read(box.artifact, "latest", urls=True), "VER-7.a", "latest")
    check_equal(download(o41_api, latest), files[2], "VER-7.a", "the latest's bytes")
    again = expect_ok(o41_api.open(box.artifact, "latest", None, "box-b"), "VER-7.a", "relaunch")
    check_equal((again.get("resume_from") or {}).get("version"), V[3], "VER-7.a",
                "the relaunch's resume_from")


@pytest.mark.rule("VER-7.b")
def test_a_deleted_step_is_never_written_again(o41_env: Env, o41_api: Client) -> None:
    """Deleted step 2, latest step 3: writing step 2 again is not after the latest (not a
    version that exists), at write or at commit, by the box that deleted it and by the
    next one; step 4 is."""
    box, _ = _three(o41_env, o41_api, "delete-reuse")
    _deleted(o41_api, box, V[2], "VER-7.b")
    for turn in ("box-a", "box-b"):
        who = box if turn == "box-a" else open_box(o41_api, box.artifact, turn)
        up = start_upload(o41_api, box.artifact, who.token, V[2], make_files({"m": 9}, 70))
        if up.upload_id is None:
            expect_error(up.write, 409, "not_after_latest", "VER-7.b",
                         f"write of {V[2]} by {who.holder}")
        else:
            expect_error(o41_api.commit(box.artifact, who.token, up.upload_id), 409,
                         "not_after_latest", "VER-7.b", f"commit of {V[2]} by {who.holder}")
        box = who
    check_equal(_listed(o41_api, box.artifact, "VER-7.b"), [V[1], V[3]], "VER-7.b",
                "list after the refused rewrites")
    commit_ok(o41_api, box, V[4], make_files({"m": 9}, 71), "VER-7.b")
    check_equal(_listed(o41_api, box.artifact, "VER-7.b"), [V[1], V[3], V[4]], "VER-7.b",
                "list after the next step")


@pytest.mark.rule("VER-7.c")
def test_urls_given_out_before_a_delete_keep_serving_its_bytes(
    o41_env: Env, o41_api: Client
) -> None:
    """URLs from a read and from a relaunch's resume_from, fetched whole and in ranges."""
    box, files = _three(o41_env, o41_api, "delete-urls")
    read = expect_ok(o41_api.read(box.artifact, V[1], urls=True), "VER-7.c", "read with URLs")
    resumed = expect_ok(o41_api.open(box.artifact, "latest", None, "box-b"), "VER-7.c",
                        "relaunch")["resume_from"]
    newest = open_box(o41_api, box.artifact, "box-c")
    commit_ok(o41_api, newest, V[4], make_files({"m": 5}, 72), "VER-7.c")
    _deleted(o41_api, newest, V[1], "VER-7.c")
    _deleted(o41_api, newest, V[3], "VER-7.c")
    # A later version with the deleted ones' file names and sizes, other bytes: the URLs
    # given out before the deletes still serve the deleted versions' own bytes.
    commit_ok(o41_api, newest, V[5], make_files({"model.bin": 301, "opt/state.bin": 50}, 73),
              "VER-7.c")
    check_equal(download(o41_api, read), files[0], "VER-7.c", "the deleted step 1's URLs")
    check_equal(download(o41_api, read, parts=3), files[0], "VER-7.c",
                "the deleted step 1's URLs, ranged")
    check_equal(download(o41_api, resumed), files[2], "VER-7.c",
                "the resume_from URLs of the deleted step 3")


@pytest.mark.rule("VER-7.c")
def test_urls_given_out_before_a_delete_serve_until_shortly_before_their_claimed_expiry(
    o41_expiring_env: Env, o41_trail: Trail
) -> None:
    """On the expiry target (short URL lifetimes): a URL read before the delete is sampled
    shortly before its urls_expire_at (or after --max-url-wait), whole and ranged."""
    env, api = o41_expiring_env, o41_expiring_env.client(trail=o41_trail)
    box = open_box(api, env.artifact("delete-expiry"), "box-a")
    first = make_files({"m.bin": 800}, 78)
    commit_ok(api, box, V[1], first, "VER-7.c")
    commit_ok(api, box, V[2], make_files({"m.bin": 10}, 79), "VER-7.c")
    reply = api.read(box.artifact, V[1], urls=True)
    body = expect_ok(reply, "VER-7.c", "read with URLs before the delete")
    claimed = parse_time(body.get("urls_expire_at"))
    check(claimed is not None, "API-1.c", "a read with urls=1 carries no urls_expire_at")
    _deleted(api, box, V[1], "VER-7.c")
    url = body["files"][0]["url"]
    waited, near_end = _sample(api, reply, claimed, env.max_url_wait)
    where = "shortly before its urls_expire_at" if near_end else f"{waited:.0f}s later"
    expect_served(api, url, first["m.bin"], (100, 199), "VER-7.c",
                  f"the deleted version's URL {where}")


@pytest.mark.rule("VER-7.d")
def test_refused_deletes_change_nothing(o41_env: Env, o41_api: Client) -> None:
    """The latest (409 is_latest), a fenced token (409 fenced), an unknown or already deleted
    version (404), a malformed name (400): each leaves list, latest and bytes as they were."""
    old, files = _three(o41_env, o41_api, "delete-refused")
    box = open_box(o41_api, old.artifact, "box-b")
    _deleted(o41_api, box, V[1], "VER-7.d")
    before = snapshot(o41_api, box.artifact)
    cases = [
        ("the latest", box.token, V[3], 409, "is_latest"),
        ("an older version, with the fenced token", old.token, V[2], 409, "fenced"),
        ("an unknown version", box.token, V[5], 404, "not_found"),
        ("the deleted version again", box.token, V[1], 404, "not_found"),
        ("a malformed version name", box.token, "step-2", 400, "invalid_argument"),
        ("a version name of 7 digits", box.token, "step-0000002", 400, "invalid_argument"),
    ]
    for what, token, version, status, code in cases:
        reply = o41_api.delete(box.artifact, token, version)
        expect_error(reply, status, code, "VER-7.d", f"delete of {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-7.d", f"delete of {what}")
    bodies = {
        "no version": {"artifact": box.artifact, "token": box.token},
        "version null": {"artifact": box.artifact, "token": box.token, "version": None},
        "version a number": {"artifact": box.artifact, "token": box.token, "version": 2},
        "no token": {"artifact": box.artifact, "version": V[2]},
    }
    for what, sent in bodies.items():
        reply = o41_api.call("POST", "/versions/delete", body=sent)
        expect_error(reply, 400, "invalid_argument", "VER-7.d", f"delete with {what}")
        expect_unchanged(o41_api, box.artifact, before, "VER-7.d", f"delete with {what}")
    for n in (2, 3):
        body = expect_ok(o41_api.read(box.artifact, V[n], urls=True), "VER-7.d", f"read {V[n]}")
        check_equal(download(o41_api, body), files[n - 1], "VER-7.d", f"bytes of {V[n]}")


@pytest.mark.read_key
@pytest.mark.rule("VER-7.d", "AUTH-3.a")
def test_a_read_key_may_not_delete(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    box, _ = _three(o41_env, o41_api, "delete-reader")
    before = snapshot(o41_api, box.artifact)
    for version in (V[1], V[3], V[5]):
        expect_error(o41_reader.delete(box.artifact, box.token, version), 403, "forbidden",
                     "VER-7.d", f"delete of {version} with the read key")
        expect_unchanged(o41_api, box.artifact, before, "VER-7.d", "the refused delete")


@pytest.mark.usage
@pytest.mark.rule("VER-7.a", "USAGE-1.e")
def test_a_deleted_version_leaves_the_placements(o41_env: Env, o41_api: Client) -> None:
    """Two versions written from a region without a location (its cloud's default, a
    placements row), then a local one: each delete takes its versions and bytes out."""
    topo = o41_env.topology
    away = topo.other_region(topo.clouds[0])
    name = o41_env.artifact("delete-placed")
    a = open_box(o41_api, name, "box-a", away)
    commit_ok(o41_api, a, V[1], make_files({"m": 1000}, 73), "VER-7.a")
    commit_ok(o41_api, a, V[2], make_files({"m": 400}, 74), "VER-7.a")
    b = open_box(o41_api, name, "box-b", topo.locations[0])
    commit_ok(o41_api, b, V[3], make_files({"m": 10}, 75), "VER-7.a")

    def placed() -> tuple[int, int]:
        usage = expect_ok(o41_api.usage(name), "VER-7.a", "usage/read")
        rows = [r for r in usage.get("placements") or []
                if Place.from_json(r.get("place")) == away and r.get("artifact", name) == name]
        return sum(int(r.get("versions") or 0) for r in rows), \
            sum(int(r.get("bytes") or 0) for r in rows)

    check_equal(placed(), (2, 1400), "USAGE-1.e", f"placements of {away} before a delete")
    _deleted(o41_api, b, V[1])
    check_equal(placed(), (1, 400), "VER-7.a", f"placements of {away} after deleting {V[1]}")
    _deleted(o41_api, b, V[2])
    check_equal(placed(), (0, 0), "VER-7.a", f"placements of {away} after deleting {V[2]}")


@pytest.mark.rule("VER-7.d", "VER-2.a")
def test_a_delete_refused_as_latest_leaves_the_version_committed(
    o41_env: Env, o41_api: Client
) -> None:
    """A box that deletes its only version is refused, and that version still blocks a
    fresh open (has_checkpoints) and a rewrite of its name (version_exists)."""
    box = open_box(o41_api, o41_env.artifact("delete-only"), "box-a")
    commit_ok(o41_api, box, V[1], make_files({"m": 20}, 76), "VER-7.d")
    expect_error(o41_api.delete(box.artifact, box.token, V[1]), 409, "is_latest", "VER-7.d",
                 "delete of the only version")
    expect_error(o41_api.open(box.artifact, None, None, "box-b"), 409, "has_checkpoints",
                 "VER-7.d", "fresh open after the refused delete")
    box = open_box(o41_api, box.artifact, "box-c")
    reply = checkpoint(o41_api, box.artifact, box.token, V[1], make_files({"m": 20}, 77))
    expect_error(reply, 409, "version_exists", "VER-2.a", "rewrite of the kept version")


@pytest.mark.scoped_key
@pytest.mark.rule("VER-7.a", "AUTH-3.c")
def test_a_prefix_scoped_key_deletes_under_its_prefix(o41_env: Env, o41_api: Client) -> None:
    """A key with write on a prefix deletes there as the main key does (and nowhere else)."""
    scoped = o41_api.with_key(o41_env.scoped_key)
    box = open_box(scoped, scoped_name(o41_env, "delete-scoped"), "box-s", rule="AUTH-3.c")
    for n in (1, 2):
        commit_ok(scoped, box, V[n], make_files({"m": 16}, 80 + n), "AUTH-3.c")
    _deleted(scoped, box, V[1])
    check_equal(_listed(scoped, box.artifact, "VER-7.a"), [V[2]], "VER-7.a",
                "list after the scoped key's delete")
