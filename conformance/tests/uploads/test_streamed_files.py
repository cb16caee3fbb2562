"""Streamed files (VER-6.a, b, e): a file declared by name alone is PUT with a Content-Length
or chunked, the PUT answers what it received, a later PUT before the commit replaces the
earlier one, nothing changes a committed version, and a body past the limit is refused."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.actions import Box
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.past_the_limit import put_declared_past
from conformance.probes import expect_invisible
from conformance.rules import check
from conformance.rules import check_equal
from conformance.uploads import declared
from conformance.uploads import expect_put_answer
from conformance.uploads import expect_version_files
from conformance.uploads import listing
from conformance.uploads import put_files
from conformance.uploads import streamed
from conformance.uploads import urls_of

V1, V2 = "step-00000001", "step-00000002"
#: The largest file size limit the suite looks for (S3's is 5 TiB, the emulator's 1 TiB).
LARGEST_LIMIT = 1 << 50


def _pieces(data: bytes, n: int) -> list[bytes]:
    step = max(1, -(-len(data) // n))
    return [data[i : i + step] for i in range(0, len(data), step)]


def _write(api: Client, box: Box, version: str, files: list[dict[str, Any]], clause: str,
           upload: str | None = None) -> tuple[str, dict[str, str]]:
    reply = api.write(box.artifact, box.token, version, files, upload)
    urls = urls_of(reply, clause, f"write of {version}")
    return str(reply.body["upload"]), urls


@pytest.mark.rule("VER-6.a")
def test_streamed_puts_with_a_length_or_chunked_answer_the_name_size_and_sha256_received(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("stream"), "box-a")
    files = make_files({"shards/one.bin": 1000, "two.bin": 777, "empty.bin": 0,
                        "none.bin": 0}, 21)
    upload, urls = _write(o41_api, box, V1, streamed(files), "VER-6.a")
    check_equal(sorted(urls), sorted(files), "VER-6.a", "the write's PUT URLs")
    one = o41_api.put(urls["shards/one.bin"], files["shards/one.bin"])
    expect_put_answer(one, "shards/one.bin", files["shards/one.bin"], "VER-6.a",
                      "PUT with a Content-Length")
    two = o41_api.put_chunked(urls["two.bin"], _pieces(files["two.bin"], 3))
    expect_put_answer(two, "two.bin", files["two.bin"], "VER-6.a", "chunked PUT")
    empty = o41_api.put_chunked(urls["empty.bin"], [])
    expect_put_answer(empty, "empty.bin", b"", "VER-6.a", "chunked PUT of no bytes")
    none = o41_api.put(urls["none.bin"], b"")
    expect_put_answer(none, "none.bin", b"", "VER-6.a", "PUT of no bytes, Content-Length: 0")
    commit = expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(files)),
                       "VER-6.a", "commit")
    check_equal(commit.get("size"), sum(len(d) for d in files.values()), "VER-6.a",
                "the version's size")
    expect_version_files(o41_api, box.artifact, V1, files, "VER-6.a", "the streamed version")
    listed = expect_ok(o41_api.list(box.artifact), "VER-6.a", "list")["versions"]
    check_equal([(v.get("version"), v.get("size")) for v in listed],
                [(V1, sum(len(d) for d in files.values()))], "VER-6.a",
                "the listed size of the streamed version")
    resume = expect_ok(o41_api.open(box.artifact, "latest", None, "box-b"), "VER-6.a",
                       "relaunch")["resume_from"] or {}
    check_equal({f.get("name"): (f.get("size"), f.get("sha256")) for f in resume.get("files")
                 or []}, {n: (len(d), sha256(d)) for n, d in files.items()}, "VER-6.a",
                "the relaunch's resume_from files")
    check_equal(download(o41_api, resume), files, "VER-6.a", "the resume_from bytes")


@pytest.mark.rule("VER-6.a", "VER-5.a")
def test_declared_and_streamed_files_commit_together_listed_or_not(
    o41_env: Env, o41_api: Client
) -> None:
    """One write with a declared and a streamed file: the commit lists the streamed one only,
    or both; a streamed file joined by a second write commits with the first write's."""
    box = open_box(o41_api, o41_env.artifact("mixed"), "box-a")
    fixed, free = make_files({"config.json": 64}, 22), make_files({"weights.bin": 900}, 23)
    upload, urls = _write(o41_api, box, V1, declared(fixed) + streamed(free), "VER-6.a")
    put_files(o41_api, urls, {**fixed, **free}, "VER-6.a", "mixed write")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(free)), "VER-6.a",
              "commit listing the streamed file only")
    expect_version_files(o41_api, box.artifact, V1, {**fixed, **free}, "VER-6.a", "v1")
    fixed2, free2 = make_files({"config.json": 64}, 24), make_files({"weights.bin": 901}, 25)
    upload, urls = _write(o41_api, box, V2, declared(fixed2), "VER-6.a")
    put_files(o41_api, urls, fixed2, "VER-6.a", "declared write")
    _, joined = _write(o41_api, box, V2, streamed(free2), "VER-5.a", upload)
    expect_put_answer(o41_api.put(joined["weights.bin"], free2["weights.bin"]), "weights.bin",
                      free2["weights.bin"], "VER-6.a", "PUT of the joined streamed file")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing({**fixed2, **free2})),
              "VER-6.a", "commit listing both files")
    expect_version_files(o41_api, box.artifact, V2, {**fixed2, **free2}, "VER-6.a", "v2")


@pytest.mark.rule("VER-6.b", "VER-6.c")
def test_a_later_put_before_the_commit_replaces_the_earlier_one(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("reput"), "box-a")
    first, later = make_files({"m.bin": 500}, 26), make_files({"m.bin": 300}, 27)
    upload, urls = _write(o41_api, box, V1, streamed(first), "VER-6.b")
    expect_put_answer(o41_api.put(urls["m.bin"], first["m.bin"]), "m.bin", first["m.bin"],
                      "VER-6.b", "first PUT")
    expect_put_answer(o41_api.put_chunked(urls["m.bin"], _pieces(later["m.bin"], 2)), "m.bin",
                      later["m.bin"], "VER-6.b", "second PUT, chunked")
    expect_error(o41_api.commit(box.artifact, box.token, upload, listing(first)), 409,
                 "incomplete", "VER-6.b", "commit listing the replaced bytes' size and sha256")
    expect_invisible(o41_api, box.artifact, V1, "VER-6.b", "the refused commit")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(later)), "VER-6.b",
              "commit listing the later PUT")
    expect_version_files(o41_api, box.artifact, V1, later, "VER-6.b", "the version")


@pytest.mark.rule("VER-6.b")
def test_a_put_after_the_commit_never_changes_the_version(o41_env: Env, o41_api: Client) -> None:
    box = open_box(o41_api, o41_env.artifact("late-put"), "box-a")
    fixed, free = make_files({"d.bin": 128}, 28), make_files({"s.bin": 256}, 29)
    upload, urls = _write(o41_api, box, V1, declared(fixed) + streamed(free), "VER-6.b")
    put_files(o41_api, urls, {**fixed, **free}, "VER-6.b", "write")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(free)), "VER-6.b", "commit")
    before = expect_version_files(o41_api, box.artifact, V1, {**fixed, **free}, "VER-6.b",
                                  "the version as committed")
    other = make_files({"d.bin": 128, "s.bin": 100}, 30)
    o41_api.put(urls["d.bin"], other["d.bin"])
    o41_api.put(urls["s.bin"], other["s.bin"])
    o41_api.put_chunked(urls["s.bin"], _pieces(other["s.bin"], 2))
    expect_version_files(o41_api, box.artifact, V1, {**fixed, **free}, "VER-6.b",
                         "the version after PUTs to its URLs")
    for f in before["files"]:
        got = o41_api.fetch(f["url"])
        check(got.status == 200 and sha256(got.content) == f["sha256"], "VER-6.b",
              f"a URL read before the late PUTs now gives {got.status}, "
              f"{len(got.content)} bytes of {f['name']}")


def _limit(api: Client, box: Box, most: int) -> int | None:
    """The largest declared size a write accepts (VER-4.e: larger is 413), if at most
    ``most``; None when even ``2 * most`` is accepted."""
    def accepted(size: int) -> bool:
        spec = [{"name": "probe.bin", "size": size, "sha256": sha256(b"")}]
        reply = api.write(box.artifact, box.token, "step-00000009", spec)
        if reply.status == 413:
            return False
        expect_ok(reply, "VER-4.e", f"write declaring {size} bytes")
        return True

    low, high = 0, 1
    while accepted(high):
        low, high = high, high * 2
        if low > 2 * most:
            return None
    while high - low > 1:  # accepted(low), refused(high)
        mid = (low + high) // 2
        low, high = (mid, high) if accepted(mid) else (low, mid)
    return low if low <= most else None


@pytest.mark.size_limit
@pytest.mark.rule("VER-6.e")
def test_a_streamed_put_past_the_limit_is_refused_and_replaces_nothing(
    o41_env: Env, o41_api: Client
) -> None:
    """The limit is found from declared sizes (VER-4.e). Under ``--max-put-bytes``, a body
    of exactly the limit is taken and one byte more is 413 with a Content-Length or chunked;
    above it (the emulator's 1 TiB), a PUT declaring one byte more than the limit is sent
    as far as the target reads it, and the target must refuse it with 413 before the suite
    has sent ``--max-put-bytes``. Either way the file keeps the bytes of its earlier PUT."""
    box = open_box(o41_api, o41_env.artifact("stream-limit"), "box-a")
    limit = _limit(o41_api, box, LARGEST_LIMIT)
    if limit is None:
        pytest.skip(f"optional capability: no file size limit up to {LARGEST_LIMIT} bytes")
    small = make_files({"m.bin": 64}, 31)
    upload, urls = _write(o41_api, box, V1, streamed(["m.bin", "full.bin"]), "VER-6.e")
    expect_put_answer(o41_api.put(urls["m.bin"], small["m.bin"]), "m.bin", small["m.bin"],
                      "VER-6.e", "PUT under the limit")
    listed = listing(small)
    if limit < o41_env.max_put_bytes:
        full = bytes(limit)
        expect_put_answer(o41_api.put(urls["full.bin"], full), "full.bin", full, "VER-6.e",
                          f"PUT of exactly the limit ({limit} bytes)")
        past = bytes(limit + 1)
        expect_error(o41_api.put(urls["m.bin"], past), 413, "payload_too_large", "VER-6.e",
                     f"PUT of {limit + 1} bytes with a Content-Length")
        expect_error(o41_api.put_chunked(urls["m.bin"], _pieces(past, 4)), 413,
                     "payload_too_large", "VER-6.e", f"chunked PUT of {limit + 1} bytes")
        listed.append({"name": "full.bin", "size": limit, "sha256": sha256(full)})
    else:
        _expect_refused_before_the_body(o41_env, o41_api, urls["m.bin"], limit)
        other = make_files({"full.bin": 10}, 32)
        expect_put_answer(o41_api.put(urls["full.bin"], other["full.bin"]), "full.bin",
                          other["full.bin"], "VER-6.e", "PUT of the other file")
        listed += listing(other)
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listed), "VER-6.e",
              "commit listing the bytes of the PUT under the limit")
    body = expect_ok(o41_api.read(box.artifact, V1, urls=True), "VER-6.e", "read")
    m = next(f for f in body["files"] if f["name"] == "m.bin")
    got = o41_api.fetch(m["url"])
    check_equal((got.status, got.content), (200, small["m.bin"]), "VER-6.e",
                "m.bin after the refused PUTs")


def _expect_refused_before_the_body(env: Env, api: Client, url: str, limit: int) -> None:
    """A limit too large to send past: the PUT declares ``limit + 1`` bytes."""
    answer = put_declared_past(api.absolute(url), limit + 1, env.max_put_bytes)
    api.trail.add(f"PUT {url.split('?')[0]} (Content-Length: {limit + 1}, {answer.sent} bytes "
                  f"sent) -> {answer.status} {answer.code()}")
    if not answer.early:
        pytest.skip(f"optional capability: the target read {answer.sent} bytes of a PUT "
                    f"declaring {limit + 1} without refusing it; a limit under --max-put-bytes N "
                    "lets the suite send past it")
    check_equal((answer.status, answer.code()), (413, "payload_too_large"), "VER-6.e",
                f"the answer to a PUT declaring {limit + 1} bytes, past the limit of {limit}")


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.a", "VER-6.a")
def test_usage_counts_the_bytes_streamed_files_received(o41_env: Env, o41_api: Client) -> None:
    """A streamed file has no declared size: usage counts the bytes its PUT received (once,
    the last PUT before the commit), beside a declared file's."""
    box = open_box(o41_api, o41_env.artifact("stream-usage"), "box-a",
                   o41_env.topology.locations[0])
    fixed, free = make_files({"d.bin": 30_000}, 32), make_files({"s.bin": 70_000}, 33)
    upload, urls = _write(o41_api, box, V1, declared(fixed) + streamed(free), "VER-6.a")
    put_files(o41_api, urls, {**fixed, **free}, "VER-6.a", "write")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(free)), "USAGE-1.a",
              "commit")
    usage = expect_ok(o41_api.usage(box.artifact), "USAGE-1.a", "usage/read")
    rows = [(t.get("version"), t.get("bytes")) for t in usage.get("transfers") or []
            if t.get("direction") == "write" and t.get("artifact", box.artifact) == box.artifact]
    check_equal(rows, [(V1, 100_000)], "USAGE-1.a", "write rows of a declared and a streamed file")
    local = (usage.get("routes") or {}).get("local") or {}
    check_equal(local.get("write_bytes"), 100_000, "USAGE-1.a", "local write_bytes")


@pytest.mark.rule("VER-6.a")
def test_streamed_puts_of_many_pieces_answer_the_size_and_sha256_of_every_byte(
    o41_env: Env, o41_api: Client
) -> None:
    """Bodies of hundreds of KB in many writes of uneven sizes, chunked and with a
    Content-Length: each PUT answers the size and sha256 of the whole body (not of its
    first or last piece), and the committed files read back byte for byte."""
    box = open_box(o41_api, o41_env.artifact("stream-pieces"), "box-a")
    rng = o41_env.rng("stream-pieces")
    files = {"chunked.bin": rng.randbytes(655_363), "length.bin": rng.randbytes(1_310_727)}
    upload, urls = _write(o41_api, box, V1, streamed(files), "VER-6.a")
    for name, data in files.items():
        cuts = sorted(rng.sample(range(1, len(data)), 40))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        if name == "chunked.bin":
            reply, how = o41_api.put_chunked(urls[name], pieces), "chunked"
        else:
            reply, how = o41_api.put_in_pieces(urls[name], pieces), "with a Content-Length"
        expect_put_answer(reply, name, data, "VER-6.a", f"PUT in {len(pieces)} pieces, {how}")
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listing(files)), "VER-6.a",
              "commit listing what the PUTs answered")
    version = expect_ok(o41_api.read(box.artifact, V1, urls=True), "VER-6.a", "read")
    got = download(o41_api, version)
    check_equal({n: sha256(d) for n, d in got.items()}, {n: sha256(d) for n, d in files.items()},
                "VER-6.a", "the bytes read back of the files PUT in pieces")
