"""Reading versions and their signed URLs (READ-1..4)."""

from __future__ import annotations

from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal
from conformance.signatures import tampered_url

SIZE = 100_000


def _one_version(o41_env: Env, o41_api: Client, slug: str, sizes: dict[str, int]) -> tuple:
    a: Box = open_box(o41_api, o41_env.artifact(slug), "box-a")
    files = make_files(sizes, 3)
    commit_ok(o41_api, a, "step-00000001", files)
    return a, files


@pytest.mark.rule("READ-1.a")
def test_read_latest_is_highest_committed_step(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("read1"), "box-a")
    for step in (1, 5, 20):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": step}))
    for version in ("latest", None):
        body = expect_ok(o41_api.read(a.artifact, version), "READ-1", f"read version={version}")
        check_equal(
            (body.get("version"), body.get("step")),
            ("step-00000020", 20),
            "READ-1",
            f"latest read with version={version}",
        )
    listed = expect_ok(o41_api.list(a.artifact), "READ-1", "list")["versions"]
    check_equal(
        [v["version"] for v in listed],
        ["step-00000001", "step-00000005", "step-00000020"],
        "READ-1",
        "list order",
    )


@pytest.mark.rule("READ-1.b")
def test_read_not_found_when_version_or_artifact_unknown(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("read1n"), "box-a")
    expect_error(
        o41_api.read(a.artifact, "latest"),
        404,
        "not_found",
        "READ-1",
        "latest of an artifact without versions",
    )
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 1}))
    expect_error(
        o41_api.read(a.artifact, "step-00000002"),
        404,
        "not_found",
        "READ-1",
        "read of a version never written",
    )
    missing = o41_env.artifact("never")
    for reply in (o41_api.read(missing), o41_api.list(missing), o41_api.artifact(missing)):
        expect_error(reply, 404, "not_found", "READ-1", f"{reply.target} of a missing artifact")


@pytest.mark.rule("READ-1.b")
@pytest.mark.usage
def test_usage_of_an_artifact_nobody_made_is_not_found(o41_env: Env, o41_api: Client) -> None:
    """The error table's not_found holds for every call naming an artifact: a report of
    zeros would read as "this run moved nothing" for a typo of the run's name."""
    missing = o41_env.artifact("never-used")
    expect_error(o41_api.usage(missing), 404, "not_found", "READ-1", "usage/read of a "
                 "missing artifact")


@pytest.mark.rule("READ-2.a")
def test_read_urls_download_with_plain_get(o41_env: Env, o41_api: Client) -> None:
    a, files = _one_version(o41_env, o41_api, "read2", {"model.pt": SIZE, "empty": 0})
    url = f"{o41_api.base}/versions/read?artifact={a.artifact}&version=latest&urls=1"
    resp = o41_api.verbatim(url)
    check_equal(resp.status, 200, "READ-2", "the page's verbatim call")
    listed = resp.body.get("files") if isinstance(resp.body, dict) else None
    check(
        isinstance(listed, list) and all(
            isinstance(f, dict) and isinstance(f.get("name"), str)
            and isinstance(f.get("url"), str) for f in listed),
        "READ-2",
        f"files are not a list of {{name, url}}: {listed!r}",
    )
    for f in listed:
        got = o41_api.fetch(f["url"])
        check_equal(got.status, 200, "READ-2", f"plain GET of {f['name']}")
        check_equal(got.content, files[f["name"]], "READ-2", f"bytes of {f['name']}")


@pytest.mark.rule("READ-2.a")
def test_read_without_urls_gives_sizes_and_hashes_only(o41_env: Env, o41_api: Client) -> None:
    a, files = _one_version(o41_env, o41_api, "read2n", {"m": 10})
    body = expect_ok(o41_api.read(a.artifact, "latest", urls=False), "READ-2", "read urls=0")
    f = body["files"][0]
    check_equal((f["name"], f["size"]), ("m", 10), "READ-2", "file entry")
    check(not f.get("url"), "READ-2", "urls=0 still returned a URL")


@pytest.mark.rule("READ-3.a")
def test_ranged_get_returns_exact_bytes(o41_env: Env, o41_api: Client) -> None:
    a, files = _one_version(o41_env, o41_api, "read3", {"m": SIZE})
    url = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2", "read")["files"][0]["url"]
    data = files["m"]
    for lo, hi in ((0, 0), (0, 99), (100, 1023), (SIZE - 1, SIZE - 1), (SIZE - 100, SIZE - 1)):
        res = o41_api.fetch(url, byte_range=(lo, hi))
        check_equal(res.status, 206, "READ-3", f"status of Range bytes={lo}-{hi}")
        check_equal(
            res.headers.get("Content-Range"),
            f"bytes {lo}-{hi}/{SIZE}",
            "READ-3",
            f"Content-Range of bytes={lo}-{hi}",
        )
        check_equal(res.content, data[lo : hi + 1], "READ-3", f"bytes {lo}-{hi}")


@pytest.mark.rule("READ-3.b")
def test_ranged_get_unsatisfiable_when_past_end(o41_env: Env, o41_api: Client) -> None:
    a, _ = _one_version(o41_env, o41_api, "read3u", {"m": 1000})
    url = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2", "read")["files"][0]["url"]
    check_equal(
        o41_api.fetch(url, byte_range=(1000, 1010)).status,
        416,
        "READ-3",
        "status of a range past the end",
    )


@pytest.mark.rule("READ-3.a")
def test_head_honours_range(o41_env: Env, o41_api: Client) -> None:
    a, _ = _one_version(o41_env, o41_api, "read3h", {"m": 1000})
    url = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2", "read")["files"][0]["url"]
    whole = o41_api.fetch(url, method="HEAD")
    # HTTP lets a HEAD reply leave Content-Length out; when it is there, it is the file's.
    check_equal(
        (whole.status, whole.headers.get("Content-Length", "1000")),
        (200, "1000"),
        "READ-3",
        "HEAD of the whole file",
    )
    part = o41_api.fetch(url, method="HEAD", byte_range=(10, 19))
    check_equal(
        (part.status, part.headers.get("Content-Range")),
        (206, "bytes 10-19/1000"),
        "READ-3",
        "ranged HEAD",
    )


@pytest.mark.rule("READ-3.a")
@pytest.mark.parametrize("parts", [2, 8])
def test_parallel_ranged_gets_reassemble_file(o41_env: Env, o41_api: Client, parts: int) -> None:
    a, files = _one_version(o41_env, o41_api, "read3p", {"model.pt": 3_000_001, "small": 5})
    body = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2", "read")
    check_equal(download(o41_api, body, parts=parts), files, "READ-3", "reassembled files")


@pytest.mark.rule("READ-4.b")
def test_url_forbidden_when_signature_changed(o41_env: Env, o41_api: Client) -> None:
    a, _ = _one_version(o41_env, o41_api, "read4s", {"m": 100})
    url = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2", "read")["files"][0]["url"]
    check_equal(
        o41_api.fetch(tampered_url(o41_api.absolute(url))).status,
        403,
        "READ-4",
        "GET with a changed signature",
    )


@pytest.mark.rule("READ-4.a")
def test_url_forbidden_when_path_changed(o41_env: Env, o41_api: Client) -> None:
    a, _ = _one_version(o41_env, o41_api, "read4p", {"a.bin": 100, "b.bin": 100})
    files = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2", "read")["files"]
    ua, ub = (urlsplit(o41_api.absolute(f["url"])) for f in files)
    if ua.query and ua.query != ub.query:
        swapped = urlunsplit(ua._replace(query=ub.query))
    else:
        swapped = urlunsplit(ua._replace(path=ua.path.replace("a.bin", "b.bin")))
    if swapped == urlunsplit(ua):
        # One opaque path per URL (no query, no file name): its signature is its path, so any
        # other path is one no one signed; change its last character.
        last = ua.path[-1:]
        swapped = urlunsplit(ua._replace(path=ua.path[:-1] + ("B" if last != "B" else "C")))
    check_equal(
        o41_api.fetch(swapped).status, 403, "READ-4", "GET of a.bin's path with b.bin's signature"
    )


VERSION_FIELDS = {
    "artifact",
    "version",
    "step",
    "location",
    "size",
    "created_at",
    "epoch",
    "holder",
    "files",
    "route",
    "cross_cloud",
}
ARTIFACT_FIELDS = {"artifact", "epoch", "holder", "latest", "versions", "forked_from", "created_at"}


@pytest.mark.rule("READ-1.a")
def test_read_objects_carry_contract_fields(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("fields"), "box-a", o41_env.topology.locations[0])
    commit_ok(o41_api, a, "step-00000007", make_files({"m": 10, "n/o": 5}))
    body = expect_ok(o41_api.read(a.artifact, "step-00000007"), "READ-1", "read")
    check(VERSION_FIELDS <= set(body), "READ-1", f"Version lacks {VERSION_FIELDS - set(body)}")
    check_equal(
        (body["artifact"], body["step"], body["size"], body["epoch"], body["holder"]),
        (a.artifact, 7, 15, a.epoch, "box-a"),
        "READ-1",
        "Version fields",
    )
    state = expect_ok(o41_api.artifact(a.artifact), "READ-1", "artifacts/read")
    check(ARTIFACT_FIELDS <= set(state), "READ-1", f"lacks {ARTIFACT_FIELDS - set(state)}")
    check(isinstance(a.opened.get("warnings"), list), "OPEN-1", "open warnings not a list")
