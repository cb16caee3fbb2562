"""Which error a request gets when it is wrong in several ways (VER-6.f): 400 before 404,
404 before 409, and 401 before all of them. Each request below is wrong in two ways, each
of which alone gets its own error elsewhere in the suite; every refusal changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.probes import Snapshot
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.uploads import declared
from conformance.uploads import put_files
from conformance.uploads import streamed
from conformance.uploads import urls_of

V1, V2, V3 = "step-00000001", "step-00000002", "step-00000003"


@dataclass(frozen=True)
class _World:
    """Artifact A with two versions, an open upload of the fenced box ``old`` (``stale``),
    one of the newest box ``box`` (of ``free``: a streamed file PUT, one not), and another
    artifact's box (``other``) and upload (``foreign``)."""

    old: Box
    box: Box
    stale: str
    foreign: str
    free: dict[str, bytes]
    other: Box

    @property
    def name(self) -> str:
        return self.box.artifact


def _world(env: Env, api: Client, slug: str) -> _World:
    name = env.artifact(slug)
    old = open_box(api, name, "box-a")
    commit_ok(api, old, V1, make_files({"m": 20}, 80), "VER-6.f")
    commit_ok(api, old, V2, make_files({"m": 20}, 81), "VER-6.f")
    reply = api.write(name, old.token, V3, declared(make_files({"m": 20}, 82)))
    urls_of(reply, "VER-6.f", "the old box's write")
    stale = str(reply.body["upload"])
    box = open_box(api, name, "box-b")
    free = make_files({"s.bin": 30, "t.bin": 10}, 83)
    reply = api.write(name, box.token, V3, streamed(free))
    urls = urls_of(reply, "VER-6.f", "the newest box's write")
    put_files(api, urls, {"s.bin": free["s.bin"]}, "VER-6.f", "the newest box's write")
    other = open_box(api, env.artifact(f"{slug}-other"), "box-o")
    reply = api.write(other.artifact, other.token, V1, declared(make_files({"m": 5}, 84)))
    urls_of(reply, "VER-6.f", "the other artifact's write")
    return _World(old, box, stale, str(reply.body["upload"]), free, other)


def _each_refused(api: Client, w: _World, before: Snapshot, request: str,
                  cases: dict[str, tuple[Reply, int, str]]) -> None:
    """Each case's reply is its error (VER-6.f) and leaves the artifact as it was."""
    for what, (reply, status, code) in cases.items():
        expect_error(reply, status, code, "VER-6.f", f"{request} of {what}")
        expect_unchanged(api, w.name, before, "VER-6.f", f"{request} of {what}")


def _upload_of(api: Client, box: Box) -> str:
    reply = api.write(box.artifact, box.token, "step-00000007",
                      streamed(["u.bin"]))
    urls_of(reply, "VER-6.f", "a write of the newest box")
    return str(reply.body["upload"])


@pytest.mark.rule("VER-6.f")
def test_a_write_wrong_in_two_ways_gets_the_earlier_of_400_404_409(
    o41_env: Env, o41_api: Client
) -> None:
    w = _world(o41_env, o41_api, "prec-write")
    old, box, name = w.old, w.box, w.name
    good = declared(make_files({"x.bin": 4}, 85))
    bad_name = [{"name": "../x.bin", "size": 1, "sha256": sha256(b"x")}]
    files4 = make_files({"c.bin": 6}, 86)
    reply = o41_api.write(name, box.token, "step-00000004", declared(files4))
    put_files(o41_api, urls_of(reply, "VER-6.f", "a write of step 4"), files4, "VER-6.f",
              "a write of step 4")
    committed = str(reply.body["upload"])
    expect_ok(o41_api.commit(name, box.token, committed), "VER-6.f", "commit of step 4")
    mine = _upload_of(o41_api, box)
    before = snapshot(o41_api, name)
    cases = {
        "a committed upload named with another version (400 > 404)":
            (o41_api.write(name, box.token, "step-00000005", good, committed),
             400, "invalid_argument"),
        "a name twice into a committed upload (400 > 404)":
            (o41_api.write(name, box.token, "step-00000004", declared(files4), committed),
             400, "invalid_argument"),
        "a malformed version into an unknown upload (400 > 404)":
            (o41_api.write(name, box.token, "step-1", good, "up-unknown-0001"),
             400, "invalid_argument"),
        "a malformed file name with a fenced token (400 > 409)":
            (o41_api.write(name, old.token, "step-00000009", bad_name),
             400, "invalid_argument"),
        "a malformed file name for a version that exists (400 > 409)":
            (o41_api.write(name, box.token, V1, bad_name), 400, "invalid_argument"),
        "an unknown token into an unknown upload (400 > 404)":
            (o41_api.write(name, "tk-not-a-token", "step-00000007", good, "up-unknown-0002"),
             400, "invalid_argument"),
        "an unknown upload with a fenced token (404 > 409)":
            (o41_api.write(name, old.token, V3, good, "up-unknown-0003"), 404, "not_found"),
        "another artifact's upload with a fenced token (404 > 409)":
            (o41_api.write(name, old.token, V3, good, w.foreign), 404, "not_found"),
        "an unknown upload for a committed version (404 > 409)":
            (o41_api.write(name, box.token, V1, good, "up-unknown-0009"), 404, "not_found"),
        "an unknown upload for a step below the latest (404 > 409)":
            (o41_api.write(name, box.token, V3, good, "up-unknown-0010"), 404, "not_found"),
        "an upload of another version with a fenced token (400 > 409)":
            (o41_api.write(name, old.token, "step-00000008", good, w.stale),
             400, "invalid_argument"),
        "a name twice in the upload, with a fenced token (400 > 409)":
            (o41_api.write(name, old.token, "step-00000007", streamed(["u.bin"]), mine),
             400, "invalid_argument"),
        "no key, a malformed version and an unknown upload (401 first)":
            (o41_api.with_key(None).write(name, box.token, "step-1", good, "up-unknown-0004"),
             401, "unauthenticated"),
    }
    _each_refused(o41_api, w, before, "write", cases)


@pytest.mark.rule("VER-6.f")
def test_a_commit_wrong_in_two_ways_gets_the_earlier_of_400_404_409(
    o41_env: Env, o41_api: Client
) -> None:
    w = _world(o41_env, o41_api, "prec-commit")
    old, box, free, name = w.old, w.box, w.free, w.name
    mine = _upload_of(o41_api, box)
    s = {"name": "s.bin", "size": len(free["s.bin"]), "sha256": sha256(free["s.bin"])}
    ghost = {"name": "ghost.bin", "size": 0, "sha256": sha256(b"")}
    before = snapshot(o41_api, name)
    cases = {
        "an unknown upload with a fenced token (404 > 409)":
            (o41_api.commit(name, old.token, "up-unknown-0005"), 404, "not_found"),
        "another artifact's upload with a fenced token (404 > 409)":
            (o41_api.commit(name, old.token, w.foreign), 404, "not_found"),
        "an unknown token and an unknown upload (400 > 404)":
            (o41_api.commit(name, "tk-not-a-token", "up-unknown-0006"),
             400, "invalid_argument"),
        "a list naming a file not of the upload and missing one (400 > 409)":
            (o41_api.commit(name, box.token, mine, [ghost]), 400, "invalid_argument"),
        "a list naming one file twice, of a fenced upload (400 > 409)":
            (o41_api.commit(name, box.token, w.stale, [s, s]), 400, "invalid_argument"),
        "a list naming a file twice, with a file not uploaded (400 > 409)":
            (o41_api.commit(name, box.token, mine, [ghost, ghost]), 400, "invalid_argument"),
        "a malformed list for an unknown upload (400 > 404)":
            (o41_api.call("POST", "/versions/commit", body={
                "artifact": name, "token": box.token, "upload": "up-unknown-0007",
                "files": "s.bin"}), 400, "invalid_argument"),
    }
    _each_refused(o41_api, w, before, "commit", cases)


@pytest.mark.rule("VER-6.f", "VER-7.d")
def test_a_delete_wrong_in_two_ways_gets_the_earlier_of_400_404_409(
    o41_env: Env, o41_api: Client
) -> None:
    w = _world(o41_env, o41_api, "prec-delete")
    old, box, name = w.old, w.box, w.name
    before = snapshot(o41_api, name)
    cases = {
        "a malformed version with a fenced token (400 > 409)":
            (o41_api.delete(name, old.token, "step-1"), 400, "invalid_argument"),
        "an unknown version with a fenced token (404 > 409)":
            (o41_api.delete(name, old.token, "step-00000099"), 404, "not_found"),
        "an unknown token and an unknown version (400 > 404)":
            (o41_api.delete(name, "tk-not-a-token", "step-00000099"), 400, "invalid_argument"),
        "another artifact's token and the latest (400 > 409)":
            (o41_api.delete(name, w.other.token, V2), 400, "invalid_argument"),
        "no key and a malformed version (401 first)":
            (o41_api.with_key(None).delete(name, box.token, "step-1"), 401, "unauthenticated"),
    }
    _each_refused(o41_api, w, before, "delete", cases)
    expect_ok(o41_api.read(name, V1), "VER-6.f", f"read {V1} after the refused deletes")



@pytest.mark.read_key
@pytest.mark.rule("VER-6.f", "AUTH-3.a")
def test_a_read_key_gets_403_before_any_other_error_of_a_write_commit_or_delete(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    w = _world(o41_env, o41_api, "prec-reader")
    box, name = w.box, w.name
    before = snapshot(o41_api, name)
    cases = {
        "delete of a malformed version": o41_reader.delete(name, box.token, "step-1"),
        "delete of an unknown version": o41_reader.delete(name, box.token, "step-00000099"),
        "delete of the latest": o41_reader.delete(name, box.token, V2),
        "write into an unknown upload": o41_reader.write(
            name, box.token, V3, streamed(["x.bin"]), "up-unknown-0008"),
        "commit listing a file twice": o41_reader.commit(
            name, box.token, w.stale, [{"name": "m", "size": 1, "sha256": sha256(b"m")}] * 2),
    }
    for what, reply in cases.items():
        expect_error(reply, 403, "forbidden", "VER-6.f", f"{what} with the read key")
        expect_unchanged(o41_api, name, before, "VER-6.f", f"{what} with the read key")
