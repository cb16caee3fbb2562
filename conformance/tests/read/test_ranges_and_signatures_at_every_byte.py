"""Signed URLs at their edges (READ-2..4): every byte edge of a range, GET and HEAD alike,
older versions not only the latest, signatures changed at any position, URLs moved to
another file, version or artifact."""

from __future__ import annotations

import secrets
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.names import edge_name
from conformance.rules import check
from conformance.rules import check_equal
from conformance.signatures import carries_values
from conformance.signatures import case_matters

SIZE = 1000
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _artifact(env: Env, api: Client, slug: str) -> tuple[Box, dict[int, dict[str, bytes]]]:
    """Three versions of two files each (plus an empty one): reads go to the middle one."""
    a = open_box(api, edge_name(env.prefix, slug, secrets.token_hex(3)), "box-a")
    files = {}
    for step in (1, 2, 3):
        sizes = {"m.bin": SIZE, "d/n.bin": SIZE + step, "empty": 0}
        if step == 1:
            sizes["big.bin"] = 2**20 + 17  # past 1 MiB: where buffered servers cut corners
        files[step] = make_files(sizes, step)
        commit_ok(api, a, f"step-{step:08d}", files[step])
    return a, files


def _urls(api: Client, artifact: str, version: str, place: str | None = None) -> dict[str, str]:
    body = expect_ok(api.read(artifact, version, urls=True, place=place), "READ-2.a", "read")
    return {f["name"]: f["url"] for f in body["files"]}


def _expect_range(api: Client, url: str, method: str, asked: tuple[int, int],
                  answer: tuple[str, bytes], what: str) -> Reply:
    """READ-3.a: a ranged ``method`` of ``url`` is a 206 with the Content-Range and (for a
    GET) the bytes of ``answer``; the reply, for a HEAD's further checks."""
    res = api.fetch(url, method=method, byte_range=asked)
    content_range, body = answer
    check_equal((res.status, res.headers.get("Content-Range")), (206, content_range),
                "READ-3.a", what)
    if method == "GET":
        check_equal(res.content, body, "READ-3.a", f"bytes of {what}")
    return res


@pytest.mark.rule("READ-2.a")
def test_every_file_of_an_older_version_downloads_plain(o41_env: Env, o41_api: Client) -> None:
    a, files = _artifact(o41_env, o41_api, "r2")
    for step in (1, 2):
        for place in (None, "gcp/europe-west4"):
            body = expect_ok(
                o41_api.read(a.artifact, f"step-{step:08d}", urls=True, place=place),
                "READ-2.a",
                f"read of step {step} from {place}",
            )
            check_equal(
                sorted(f["name"] for f in body["files"]), sorted(files[step]), "READ-2.a", "files"
            )
            for f in body["files"]:
                got = o41_api.fetch(f["url"])
                check_equal(got.status, 200, "READ-2.a", f"plain GET of {f['name']}")
                check_equal(
                    (len(got.content), sha256(got.content)),
                    (f["size"], f["sha256"]),
                    "READ-2.a",
                    f"size and sha256 of {f['name']} of step {step}",
                )
                check_equal(got.content, files[step][f["name"]], "READ-2.a", f["name"])


def _edges(size: int) -> list[tuple[int, int]]:
    mid = size // 2
    return [(0, 0), (size - 1, size - 1), (0, size - 1), (mid, mid), (1, size - 2), (0, 1)]


@pytest.mark.rule("READ-3.a")
def test_range_ending_past_the_end_is_cut_to_the_file(o41_env: Env, o41_api: Client) -> None:
    """RFC 9110: a range whose start is inside the file is satisfiable; its end is cut."""
    a, files = _artifact(o41_env, o41_api, "r3e")
    urls = _urls(o41_api, a.artifact, "step-00000002")
    data = files[2]["m.bin"]
    for lo, hi in ((SIZE - 10, SIZE + 10), (0, SIZE * 5), (SIZE - 1, SIZE)):
        for method in ("GET", "HEAD"):
            _expect_range(o41_api, urls["m.bin"], method, (lo, hi),
                          (f"bytes {lo}-{SIZE - 1}/{SIZE}", data[lo:]),
                          f"{method} Range bytes={lo}-{hi} of {SIZE} bytes")


@pytest.mark.rule("READ-3.a")
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_ranges_at_every_edge_of_the_file(o41_env: Env, o41_api: Client, method: str) -> None:
    a, files = _artifact(o41_env, o41_api, "r3")
    urls = _urls(o41_api, a.artifact, "step-00000002")
    for name in ("m.bin", "d/n.bin"):
        data = files[2][name]
        for lo, hi in _edges(len(data)):
            what = f"{method} {name} of step 2, Range bytes={lo}-{hi}"
            res = _expect_range(o41_api, urls[name], method, (lo, hi),
                                (f"bytes {lo}-{hi}/{len(data)}", data[lo : hi + 1]), what)
            if method == "HEAD":
                # HTTP lets a HEAD reply leave Content-Length out; when it is there, it is
                # the length the ranged GET would send.
                check_equal(
                    (res.headers.get("Content-Length", str(hi - lo + 1)), res.content),
                    (str(hi - lo + 1), b""),
                    "READ-3.a",
                    f"length and body of {what}",
                )


@pytest.mark.rule("READ-3.b")
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_ranges_starting_at_or_past_the_end_unsatisfiable(
    o41_env: Env, o41_api: Client, method: str
) -> None:
    a, _ = _artifact(o41_env, o41_api, "r3b")
    urls = _urls(o41_api, a.artifact, "step-00000001")
    for name, size in (("m.bin", SIZE), ("d/n.bin", SIZE + 1), ("empty", 0)):
        for lo, hi in ((size, size), (size, size + 10), (size + 500, size + 501)):
            res = o41_api.fetch(urls[name], method=method, byte_range=(lo, hi))
            check_equal(res.status, 416, "READ-3.b", f"{method} {name} Range bytes={lo}-{hi}")


def _moved(url: str, onto: str) -> str:
    """``url``'s signature (its query) on ``onto``'s path. A URL without a query carries its
    signature in its path: then ``url`` with its path's last character changed, a path no
    one signed (``test_urls_built_by_hand.py`` beside this file builds the other files' URLs
    by name)."""
    u, v = urlsplit(url), urlsplit(onto)
    if not carries_values(u.query):
        last = u.path[-1:]
        return urlunsplit(u._replace(path=u.path[:-1] + ("B" if last != "B" else "C")))
    return urlunsplit(v._replace(query=u.query))


@pytest.mark.rule("READ-4.a")
def test_url_moved_to_another_file_version_or_artifact_forbidden(
    o41_env: Env, o41_api: Client
) -> None:
    a, _ = _artifact(o41_env, o41_api, "r4a")
    b, _ = _artifact(o41_env, o41_api, "r4b")
    v1, v2 = (_urls(o41_api, a.artifact, f"step-0000000{n}") for n in (1, 2))
    other = _urls(o41_api, b.artifact, "step-00000001")
    pairs = [
        (v1["m.bin"], v1["d/n.bin"], "another file"),
        (v1["m.bin"], v2["m.bin"], "the same file of another version"),
        (v1["m.bin"], other["m.bin"], "the same file of another artifact"),
        (v2["empty"], v2["m.bin"], "an empty file's URL on a full file"),
    ]
    for signed, target, what in pairs:
        moved = _moved(o41_api.absolute(signed), o41_api.absolute(target))
        for method in ("GET", "HEAD"):
            check_equal(
                o41_api.fetch(moved, method=method).status, 403, "READ-4.a", f"{method} {what}"
            )
    up = start_upload(
        o41_api, a.artifact, a.token, "step-00000004", make_files({"x": 3, "y": 3}), put=False
    )
    put = {f["name"]: f["url"] for f in expect_ok(up.write, "READ-4.a", "write")["files"]}
    moved_put = _moved(o41_api.absolute(put["x"]), o41_api.absolute(put["y"]))
    check_equal(o41_api.put(moved_put, b"abc").status, 403, "READ-4.a", "PUT with x's URL on y")


def _variants(url: str) -> list[tuple[str, str]]:
    """The URL with its signature changed at the start, the middle and near the end, cut by
    one character, lengthened by one, and removed; and with its case swapped, when the
    signature mixes cases (base64): a hex or base32 signature may rightly be read in any case,
    so a change there is never one of case alone."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not carries_values(parts.query):
        return []
    i = max(range(len(query)), key=lambda j: len(query[j][1]))
    key, sig = query[i]

    def flip(pos: int) -> str:
        other = next(c for c in "BC" if c.lower() != sig[pos].lower())
        return sig[:pos] + other + sig[pos + 1 :]

    def flip_last() -> str:
        """The last character with its top bit changed: in base64 its low bits may be
        padding that decoders ignore, so a nearby letter could leave the bytes as they were."""
        i = _B64.find(sig[-1])
        return sig[:-1] + (_B64[i ^ 32] if i >= 0 else "A")

    changed = {
        "first": flip(0),
        "middle": flip(len(sig) // 2),
        "near-end": flip(len(sig) - 3),
        "last": flip_last(),
        "cut": sig[:-1],
        "longer": sig + "A",
    }
    if case_matters(sig):
        changed["case-swapped"] = sig.swapcase()
    out = []
    for what, value in changed.items():
        q = list(query)
        q[i] = (key, value)
        out.append((what, urlunsplit(parts._replace(query=urlencode(q)))))
    rest = [kv for j, kv in enumerate(query) if j != i]
    out.append(("removed", urlunsplit(parts._replace(query=urlencode(rest)))))
    return out


@pytest.mark.rule("READ-4.b")
def test_signature_changed_anywhere_forbidden(o41_env: Env, o41_api: Client) -> None:
    a, _ = _artifact(o41_env, o41_api, "r4s")
    url = o41_api.absolute(_urls(o41_api, a.artifact, "step-00000002")["m.bin"])
    variants = _variants(url)
    if not variants:
        pytest.skip("the target's URLs carry no query signature to change")
    for what, bad in variants:
        for method, rng in (("GET", None), ("HEAD", None), ("GET", (0, 9))):
            res = o41_api.fetch(bad, method=method, byte_range=rng)
            check_equal(res.status, 403, "READ-4.b", f"{method} {rng} with the signature {what}")
    up = start_upload(o41_api, a.artifact, a.token, "step-00000004", {"x": b"abc"}, put=False)
    put = o41_api.absolute(expect_ok(up.write, "READ-4.b", "write")["files"][0]["url"])
    for what, bad in _variants(put):
        check_equal(o41_api.put(bad, b"abc").status, 403, "READ-4.b", f"PUT, signature {what}")
    expect_error(
        o41_api.commit(a.artifact, a.token, str(up.upload_id)),
        409,
        "incomplete",
        "READ-4.b",
        "commit after only forged PUTs",
    )
    check(o41_api.fetch(url).status == 200, "READ-2.a", "the untouched URL still works")
