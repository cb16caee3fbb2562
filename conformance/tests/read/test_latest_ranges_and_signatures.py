"""READ-1..4 where reads go wrong quietly: cached latest URLs, steps between committed
ones, forks, the second or nested file of a version, files past 1 MiB, every range edge,
and signatures changed only a little or borrowed from another version."""

from __future__ import annotations

from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal
from conformance.rules import rule_of
from conformance.rules import unknown_rules
from conformance.signatures import carries_values
from conformance.signatures import case_matters

MIB = 1 << 20
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def clause(cid: str) -> pytest.MarkDecorator:
    """Tag a test with its clause id where the contract's ids know clauses, else its rule."""
    return pytest.mark.rule(cid if not unknown_rules([cid]) else rule_of(cid))


def _version(env: Env, api: Client, slug: str, sizes: dict[str, int]) -> tuple[Box, dict]:
    a = open_box(api, env.artifact(slug), "box-a")
    files = make_files(sizes, 11)
    commit_ok(api, a, "step-00000001", files)
    return a, files


def _urls(api: Client, artifact: str, version: str = "latest") -> dict[str, str]:
    body = expect_ok(api.read(artifact, version, urls=True), "READ-2", f"read {version}")
    return {f["name"]: api.absolute(f["url"]) for f in body["files"]}


@clause("READ-1.a")
def test_latest_with_urls_follows_each_new_commit(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("read1a"), "box-a")
    for step in (1, 2, 3):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 10}, step))
        for version in ("latest", None):
            body = expect_ok(o41_api.read(a.artifact, version, urls=True), "READ-1", "read")
            check_equal(body["version"], f"step-{step:08d}", "READ-1",
                        f"latest with urls=1 (version={version}) after commit {step}")


@clause("READ-1.b")
def test_read_not_found_for_step_between_committed_steps(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("read1b"), "box-a")
    for step in (1, 5):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 10}, step))
    for urls in (False, True):
        expect_error(
            o41_api.read(a.artifact, "step-00000003", urls=urls),
            404,
            "not_found",
            "READ-1",
            f"read of step 3 between steps 1 and 5 (urls={urls})",
        )


@clause("READ-1.b")
def test_fork_read_not_found_for_a_version_only_the_source_has(
    o41_env: Env, o41_api: Client
) -> None:
    src = open_box(o41_api, o41_env.artifact("read1b-src"), "box-s")
    for step in (1, 2):
        commit_ok(o41_api, src, f"step-{step:08d}", make_files({"m": 10}, step))
    fork = open_box(o41_api, o41_env.artifact("read1b-fork"), "box-f",
                    resume=f"o41://{src.artifact}/step-00000002", rule="FORK-2")
    expect_error(
        o41_api.read(fork.artifact, "step-00000001"),
        404,
        "not_found",
        "READ-1",
        "read in a fork of a version only its source has",
    )


@clause("READ-2.a")
def test_plain_get_downloads_every_file_of_a_big_nested_version(
    o41_env: Env, o41_api: Client
) -> None:
    sizes = {"model.pt": MIB + 4097, "shards/rank-1/optim.pt": 3000, "meta.json": 0}
    a, files = _version(o41_env, o41_api, "read2a", sizes)
    url = f"{o41_api.base}/versions/read?artifact={a.artifact}&version=latest&urls=1"
    listed = o41_api.verbatim(url)
    check_equal(listed.status, 200, "READ-2", "the page's verbatim call")
    entries = listed.body.get("files") if isinstance(listed.body, dict) else None
    check(isinstance(entries, list) and all(isinstance(f, dict) for f in entries), "READ-2",
          f"files are not a list of objects: {entries!r}")
    check_equal(sorted(f["name"] for f in entries if f.get("url")), sorted(files), "READ-2",
                "files with a URL")
    for f in entries:
        got = o41_api.fetch(f["url"])
        check_equal(got.status, 200, "READ-2", f"plain GET of {f['name']}")
        check_equal(len(got.content), len(files[f["name"]]), "READ-2", f"size of {f['name']}")
        check(got.content == files[f["name"]], "READ-2", f"bytes of {f['name']} differ")


def _ranged(api: Client, url: str, lo: int, hi: int, size: int, data: bytes, method: str,
            what: str) -> None:
    res = api.fetch(url, method=method, byte_range=(lo, hi))
    end = min(hi, size - 1)
    check_equal((res.status, res.headers.get("Content-Range")),
                (206, f"bytes {lo}-{end}/{size}"), "READ-3", f"{method} {what} bytes={lo}-{hi}")
    if method == "GET":
        check(res.content == data[lo:end + 1], "READ-3", f"bytes of {what} bytes={lo}-{hi}")


@clause("READ-3.a")
def test_ranges_exact_at_every_edge_of_every_file(o41_env: Env, o41_api: Client) -> None:
    size = 2 * MIB + 3
    a, files = _version(o41_env, o41_api, "read3a", {"model.pt": size, "small.bin": 1000})
    urls = _urls(o41_api, a.artifact)
    big, small = files["model.pt"], files["small.bin"]
    cases = [(1, 1), (size // 2, size // 2), (size - 2, size - 2), (MIB, MIB + 99),
             (MIB + 7, 2 * MIB), (size - 10, size + 100), (0, size), (size - 1, size - 1)]
    for lo, hi in cases:
        _ranged(o41_api, urls["model.pt"], lo, hi, size, big, "GET", "model.pt")
    for method in ("GET", "HEAD"):
        for lo, hi in ((0, 0), (10, 19), (500, 500), (990, 2000), (999, 999)):
            _ranged(o41_api, urls["small.bin"], lo, hi, 1000, small, method, "small.bin")


@clause("READ-3.b")
def test_unsatisfiable_ranges_get_416_for_get_and_head(o41_env: Env, o41_api: Client) -> None:
    a, _ = _version(o41_env, o41_api, "read3b", {"m": 1000, "empty": 0})
    urls = _urls(o41_api, a.artifact)
    for method in ("GET", "HEAD"):
        for name, lo, hi in (("m", 1000, 1000), ("m", 1001, 1100), ("m", 5000, 6000),
                             ("empty", 0, 0), ("empty", 0, 10)):
            res = o41_api.fetch(urls[name], method=method, byte_range=(lo, hi))
            check_equal(res.status, 416, "READ-3", f"{method} {name} bytes={lo}-{hi}")


def _with_signature(url: str, change) -> str:  # noqa: ANN001
    """``url`` with its signature (the longest query value, else the path's last segment:
    a URL may be one opaque path) passed through ``change``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not carries_values(parts.query):
        head, _, last = parts.path.rpartition("/")
        return urlunsplit(parts._replace(path=f"{head}/{change(last)}"))
    i = max(range(len(query)), key=lambda j: len(query[j][1]))
    query[i] = (query[i][0], change(query[i][1]))
    return urlunsplit(parts._replace(query=urlencode(query)))


def _signature_of(url: str) -> str:
    """What ``_with_signature`` changes."""
    seen: list[str] = []
    _with_signature(url, lambda s: seen.append(s) or s)
    return seen[0]


def _last_char_changed(sig: str) -> str:
    """The last character moved 16 places in the base64url alphabet: that changes one of
    its top bits, which padding never covers, so the signature really differs."""
    last = sig[-1]
    swap = B64[(B64.index(last) + 16) % 64] if last in B64 else ("0" if last != "0" else "1")
    return sig[:-1] + swap


@clause("READ-4.a")
def test_signature_refused_on_the_same_file_of_another_version(
    o41_env: Env, o41_api: Client
) -> None:
    a = open_box(o41_api, o41_env.artifact("read4a"), "box-a")
    for step in (1, 2):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 100, "n": 100}, step))
    one, two = _urls(o41_api, a.artifact, "step-00000001"), _urls(o41_api, a.artifact)
    moved = urlunsplit(urlsplit(two["m"])._replace(query=urlsplit(one["m"]).query))
    other = urlunsplit(urlsplit(two["m"])._replace(query=urlsplit(two["n"]).query))
    if moved in (one["m"], two["m"]) or other in (two["n"], two["m"]):
        pytest.skip("the target signs in the path: query swaps do not move a signature")
    for url, what in ((moved, "step 1's signature on step 2's m"),
                      (other, "n's signature on m")):
        for method in ("GET", "HEAD"):
            check_equal(o41_api.fetch(url, method=method).status, 403, "READ-4", f"{method} {what}")


@clause("READ-4.b")
def test_signature_refused_when_changed_only_a_little(o41_env: Env, o41_api: Client) -> None:
    a, _ = _version(o41_env, o41_api, "read4b", {"m": 100})
    url = _urls(o41_api, a.artifact)["m"]
    changes = {
        "last character": _last_char_changed,
        "last character dropped": lambda s: s[:-1],
        "last 3 characters dropped": lambda s: s[:-3],
    }
    if case_matters(_signature_of(url)):
        changes["letter case"] = str.swapcase
    for what, change in changes.items():
        check_equal(o41_api.fetch(_with_signature(url, change)).status, 403, "READ-4",
                    f"GET with the signature's {what}")
    check_equal(o41_api.fetch(url).status, 200, "READ-2", "GET of the URL as signed")
