"""Reads and names that are right in the common case and easy to get wrong in a rarer one:
deep file paths, step 0, latest read from a place after a newer commit, a range over the
whole file, a signature moved to another artifact or lengthened, a body PUT to a file
declared empty. Each test here killed a subtle mutant the rest of the suite missed."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal


@pytest.mark.rule("VER-1.b")
@pytest.mark.parametrize("file_name", ["a/b/c/..", "a/b/c/./d", "a/b/c//d", "a/b/c/d/"])
def test_bad_segments_deep_in_a_file_name_invalid(
    o41_env: Env, o41_api: Client, file_name: str
) -> None:
    """VER-1.b: every segment is checked, however deep."""
    box = open_box(o41_api, o41_env.artifact("deep-name"), "box-a")
    specs = [{"name": file_name, "size": 1, "sha256": sha256(b"x")}]
    expect_error(o41_api.write(box.artifact, box.token, "step-00000001", specs), 400,
                 "invalid_argument", "VER-1.b", f"write of {file_name!r}")


@pytest.mark.rule("READ-1.a", "READ-1.b")
def test_latest_from_a_place_follows_commits_and_step_zero_is_unknown(
    o41_env: Env, o41_api: Client
) -> None:
    """READ-1.a: a latest read from a place names the newest commit each time; READ-1.b:
    step-00000000, never committed, is 404 even on an artifact with versions."""
    place = o41_env.topology.locations[-1]
    box = open_box(o41_api, o41_env.artifact("latest-place"), "box-a", place)
    for step in (1, 2, 3):
        commit_ok(o41_api, box, f"step-{step:08d}", make_files({"m": 10 + step}, step))
        body = expect_ok(o41_api.read(box.artifact, "latest", place=place), "READ-1", "read")
        check_equal(body.get("version"), f"step-{step:08d}", "READ-1", f"latest after {step}")
        expect_error(o41_api.read(box.artifact, "step-00000000"), 404, "not_found", "READ-1",
                     "read of step-00000000")


_CR = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


@pytest.mark.rule("READ-3.a")
def test_range_over_the_whole_file_is_partial_content(o41_env: Env, o41_api: Client) -> None:
    """READ-3.a: bytes=0-<last byte> is a range like any other: 206 with Content-Range."""
    box = open_box(o41_api, o41_env.artifact("whole-range"), "box-a")
    files = make_files({"m": 4096}, 7)
    commit_ok(o41_api, box, "step-00000001", files)
    url = expect_ok(o41_api.read(box.artifact, urls=True), "READ-2", "read")["files"][0]["url"]
    for method in ("GET", "HEAD"):
        res = o41_api.fetch(url, method=method, byte_range=(0, 4095))
        m = _CR.fullmatch(res.headers.get("Content-Range", ""))
        check(res.status == 206 and m is not None and (m[1], m[2]) == ("0", "4095"), "READ-3",
              f"{method} bytes=0-4095 of 4096: {res.status} {res.headers.get('Content-Range')}")
        if method == "GET":
            check_equal(res.content, files["m"], "READ-3", "bytes of the whole-file range")


def _swap_query(own: str, other: str) -> str | None:
    """``own``'s path with ``other``'s query (None when URLs carry no query to move)."""
    a, b = urlsplit(own), urlsplit(other)
    if not a.query or a.query == b.query:
        return None
    return urlunsplit(a._replace(query=b.query))


@pytest.mark.rule("READ-4.a", "READ-4.b")
def test_signature_of_another_artifact_or_lengthened_forbidden(
    o41_env: Env, o41_api: Client
) -> None:
    """READ-4.a: a signature of the same version and file name of ANOTHER artifact does not
    open this one; READ-4.b: a signature with characters appended is a changed one."""
    urls = []
    for slug in ("sig-a", "sig-b"):
        box = open_box(o41_api, o41_env.artifact(slug), "box")
        commit_ok(o41_api, box, "step-00000001", make_files({"m.bin": 64}, len(slug)))
        body = expect_ok(o41_api.read(box.artifact, urls=True), "READ-2", "read")
        urls.append(o41_api.absolute(body["files"][0]["url"]))
    moved = _swap_query(urls[1], urls[0])
    if moved is None:
        pytest.skip("the target's URLs carry no query signature to move between artifacts")
    check_equal(o41_api.fetch(moved).status, 403, "READ-4", "b's file with a's signature")
    check_equal(o41_api.fetch(_lengthened(urls[0])).status, 403, "READ-4",
                "the URL with '00' appended to its signature")


def _lengthened(url: str) -> str:
    """The URL with ``00`` appended to its longest query value (its signature)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    i = max(range(len(query)), key=lambda j: len(query[j][1]))
    query[i] = (query[i][0], query[i][1] + "00")
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.mark.rule("VER-4.e", "API-1.a")
def test_body_put_to_a_file_declared_empty_too_large(o41_env: Env, o41_api: Client) -> None:
    """VER-4.e: a file declared with size 0 takes no body: one byte is longer than declared."""
    box = open_box(o41_api, o41_env.artifact("empty-put"), "box-a")
    up = start_upload(o41_api, box.artifact, box.token, "step-00000001",
                      {"empty.bin": b"", "m.bin": b"abc"}, put=False)
    body = expect_ok(up.write, "VER-4", "write")
    url = next(f["url"] for f in body["files"] if f["name"] == "empty.bin")
    expect_error(o41_api.put(url, b"x"), 413, "payload_too_large", "VER-4.e",
                 "PUT of 1 byte to a file declared empty")
