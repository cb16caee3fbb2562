"""File names the grammar allows but URLs make awkward (VER-1, READ-2.a): a space, letters
outside ASCII, and characters that mean something in a URL (``%``, ``+``, ``?``, ``#``,
``&``, ``=``, ``;``). Each is a relative path without ``.``, ``..`` or empty segments, so it
is written, PUT through its URL (declared or streamed), read back under its own name, and
its read URL downloads its own bytes, whole and in a range."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal
from conformance.uploads import declared
from conformance.uploads import expect_put_answer
from conformance.uploads import streamed
from conformance.uploads import urls_of

NAMES = {
    "my model.bin": 120,
    "données/état.bin": 90,
    "50%25 done.bin": 70,
    "a+b=c&d;e.bin": 60,
    "what?.bin": 50,
    "hash#tag/x.bin": 40,
}


def _from_a_read_and_a_relaunch(
    api: Client, artifact: str, version: str
) -> tuple[tuple[str, dict], tuple[str, dict]]:
    """The URLs of ``version`` from a read, then of latest from box-b's relaunch."""
    read = expect_ok(api.read(artifact, version, urls=True), "READ-2.a", "read")
    resumed = expect_ok(api.open(artifact, "latest", None, "box-b"), "READ-2.a",
                        "relaunch")["resume_from"]
    return ("read", read), ("resume_from", resumed)


@pytest.mark.rule("READ-2.a", "VER-1.b")
def test_file_names_with_spaces_non_ascii_or_url_characters_read_back_through_their_urls(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("odd-names"), "box-a")
    files = make_files(NAMES, 140)
    names = sorted(files)
    half = set(names[::2])  # every other name declared, the rest streamed (VER-6)
    specs = declared({n: files[n] for n in half}) + streamed([n for n in names
                                                              if n not in half])
    reply = o41_api.write(box.artifact, box.token, "step-00000001", specs)
    urls = urls_of(reply, "VER-1.b", "write of the unusual names")
    check_equal(sorted(urls), names, "VER-1.b", "the write's URLs are of the names written")
    for name in names:
        put = o41_api.put(urls[name], files[name])
        if name in half:
            check(put.ok, "READ-2.a", f"PUT of {name!r} got {put.brief()}")
        else:
            expect_put_answer(put, name, files[name], "VER-6.a", f"PUT of {name!r}")
    listed = [{"name": n, "size": len(files[n]), "sha256": sha256(files[n])} for n in names
              if n not in half]
    expect_ok(o41_api.commit(box.artifact, box.token, str(reply.body["upload"]), listed),
              "VER-1.b", "commit of the unusual names")
    body = expect_ok(o41_api.read(box.artifact, "step-00000001", urls=True), "READ-2.a",
                     "read with URLs")
    got = {f.get("name"): (f.get("size"), f.get("sha256")) for f in body.get("files") or []}
    check_equal(got, {n: (len(d), sha256(d)) for n, d in files.items()}, "READ-2.a",
                "the files read back")
    for f in body["files"]:
        name, data = f["name"], files[f["name"]]
        res = o41_api.fetch(f["url"])
        check_equal((res.status, res.content == data), (200, True), "READ-2.a",
                    f"plain GET of {name!r}")
        part = o41_api.fetch(f["url"], byte_range=(5, 14))
        check_equal((part.status, part.content), (206, data[5:15]), "READ-3.a",
                    f"GET Range bytes=5-14 of {name!r}")


@pytest.mark.rule("READ-4.e", "READ-2.a")
def test_a_read_url_serves_every_load_until_it_expires_not_only_the_first(
    o41_env: Env, o41_api: Client
) -> None:
    """A URL works until the expiry its reply claims: a box that loads a checkpoint twice
    (a retry, or two processes of one job) gets the bytes each time, whole, ranged and by
    HEAD in any order, from a read and from a relaunch's resume_from."""
    box = open_box(o41_api, o41_env.artifact("url-reused"), "box-a")
    files = make_files({"m.bin": 300, "opt/s.bin": 40}, 150)
    commit_ok(o41_api, box, "step-00000001", files, "READ-2.a")
    for where, version in _from_a_read_and_a_relaunch(o41_api, box.artifact, "latest"):
        for f in version["files"]:
            data = files[f["name"]]
            for turn in range(3):
                res = o41_api.fetch(f["url"])
                check_equal((res.status, res.content == data), (200, True), "READ-4.e",
                            f"plain GET {turn + 1} of {f['name']} from the {where}")
                check_equal(o41_api.fetch(f["url"], method="HEAD").status, 200, "READ-4.e",
                            f"HEAD {turn + 1} of {f['name']} from the {where}")
                part = o41_api.fetch(f["url"], byte_range=(turn, turn + 9))
                check_equal((part.status, part.content), (206, data[turn:turn + 10]),
                            "READ-4.e", f"ranged GET {turn + 1} of {f['name']} from the {where}")


@pytest.mark.rule("VER-2.b", "READ-2.a")
def test_a_put_to_a_read_url_never_changes_the_committed_file(
    o41_env: Env, o41_api: Client
) -> None:
    """A read URL is for reading: a PUT to it (from a read or a resume_from), whatever it
    answers, leaves the committed bytes as they were, through that URL and a fresh one."""
    box = open_box(o41_api, o41_env.artifact("put-on-read-url"), "box-a")
    files = make_files({"m.bin": 200, "d/n.bin": 50}, 155)
    commit_ok(o41_api, box, "step-00000001", files, "VER-2.b")
    for where, version in _from_a_read_and_a_relaunch(o41_api, box.artifact, "step-00000001"):
        for f in version["files"]:
            forged = bytes(len(files[f["name"]]))  # same length, other bytes
            o41_api.put(f["url"], forged)
            got = o41_api.fetch(f["url"])
            check_equal((got.status, got.content == files[f["name"]]), (200, True), "VER-2.b",
                        f"GET of {f['name']} after a PUT to its {where} URL")
    fresh = expect_ok(o41_api.read(box.artifact, "step-00000001", urls=True), "VER-2.b",
                      "read after the PUTs")
    check_equal({f["name"]: f["sha256"] for f in fresh["files"]},
                {n: sha256(d) for n, d in files.items()}, "VER-2.b", "sha256 after the PUTs")
    for f in fresh["files"]:
        got = o41_api.fetch(f["url"])
        check_equal(got.content == files[f["name"]], True, "VER-2.b",
                    f"bytes of {f['name']} from a fresh URL after the PUTs")
