"""VER-5 and VER-6: the ranks of one job write one upload; files streamed by name alone."""

from __future__ import annotations

import threading

import pytest

from tests.support.emulator_http import AWS, Box, Http, Reply, sha

WRITE, COMMIT = "/api/v1/versions/write", "/api/v1/versions/commit"
V1 = "step-00000001"


@pytest.fixture
def box(http: Http, artifact: str) -> Box:
    b = Box(http, artifact, AWS)
    assert b.open().status == 200
    return b


def write(box: Box, files: list[dict], *, version: str = V1, upload: str | None = None,
          token: str | None = None) -> Reply:
    body = {"artifact": box.artifact, "token": token or box.token, "version": version,
            "files": files}
    if upload is not None:
        body["upload"] = upload
    return box.http.request("POST", WRITE, json=body)


def commit(box: Box, upload: str, files: list[dict] | None = None,
           token: str | None = None) -> Reply:
    body: dict = {"artifact": box.artifact, "token": token or box.token, "upload": upload}
    if files is not None:
        body["files"] = files
    return box.http.request("POST", COMMIT, json=body)


def declared(name: str, data: bytes) -> dict:
    return {"name": name, "size": len(data), "sha256": sha(data)}


def put(box: Box, written: Reply, name: str, data: bytes) -> Reply:
    url = next(f["url"] for f in written.body["files"] if f["name"] == name)
    return box.http.request("PUT", url, key=None, data=data)


def nothing_visible(box: Box) -> bool:
    return box.read(V1).status == 404 and box.read().status == 404


def test_ranks_writing_into_one_upload_commit_one_version_of_every_file(box: Box) -> None:
    shards = {f"__{rank}_0.distcp": bytes([rank]) * (1000 + rank) for rank in range(3)}
    first = write(box, [{"name": "__0_0.distcp"}])
    upload = first.body["upload"]
    answers = {"__0_0.distcp": put(box, first, "__0_0.distcp", shards["__0_0.distcp"]).body}

    def rank(r: int) -> None:  # each rank its own write into the coordinator's upload
        name = f"__{r}_0.distcp"
        joined = write(box, [{"name": name}], upload=upload)
        assert (joined.status, joined.body["upload"]) == (200, upload)
        answers[name] = put(box, joined, name, shards[name]).body

    threads = [threading.Thread(target=rank, args=(r,)) for r in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    meta = write(box, [declared(".metadata", b"plan")], upload=upload)
    assert put(box, meta, ".metadata", b"plan").status == 200
    done = commit(box, upload, list(answers.values()))
    assert done.status == 200, done.body
    version = box.read(V1).body
    assert sorted(f["name"] for f in version["files"]) == sorted([*shards, ".metadata"])
    for f in version["files"]:
        data = shards.get(f["name"], b"plan")
        assert (f["size"], f["sha256"]) == (len(data), sha(data))
        assert box.http.request("GET", f["url"], key=None).content == data
    assert version["size"] == sum(map(len, shards.values())) + 4


def test_streamed_put_answers_what_it_received(box: Box) -> None:
    w = write(box, [{"name": "model.pt"}])
    r = put(box, w, "model.pt", b"weights" * 1000)
    assert r.status == 200
    assert r.body == {"name": "model.pt", "size": 7000, "sha256": sha(b"weights" * 1000)}


def test_later_put_of_a_streamed_file_replaces_the_earlier_one(box: Box) -> None:
    w = write(box, [{"name": "a"}])
    put(box, w, "a", b"first")
    second = put(box, w, "a", b"second try").body
    assert commit(box, w.body["upload"], [second]).status == 200
    v = box.read(V1).body
    assert box.http.request("GET", v["files"][0]["url"], key=None).content == b"second try"


def test_put_after_the_commit_never_changes_the_version(box: Box) -> None:
    w = write(box, [{"name": "a"}])
    answer = put(box, w, "a", b"kept").body
    assert commit(box, w.body["upload"], [answer]).status == 200
    late = put(box, w, "a", b"late bytes")
    assert (late.status, late.code) == (409, "version_exists")
    f = box.read(V1).body["files"][0]
    assert (f["size"], f["sha256"]) == (4, sha(b"kept"))
    assert box.http.request("GET", f["url"], key=None).content == b"kept"


@pytest.mark.parametrize("listed", [
    pytest.param(lambda got: [], id="streamed-file-missing-from-list"),
    pytest.param(lambda got: [{**got, "size": got["size"] + 1}], id="wrong-size"),
    pytest.param(lambda got: [{**got, "sha256": sha(b"other")}], id="wrong-sha256"),
])
def test_commit_without_the_streamed_file_as_received_is_incomplete_and_can_be_mended(
    box: Box, listed
) -> None:
    w = write(box, [{"name": "a"}])
    got = put(box, w, "a", b"bytes").body
    r = commit(box, w.body["upload"], listed(got))
    assert (r.status, r.code) == (409, "incomplete")
    assert nothing_visible(box)
    assert commit(box, w.body["upload"], [got]).status == 200


def test_streamed_file_never_uploaded_is_incomplete_even_when_listed(box: Box) -> None:
    w = write(box, [{"name": "a"}])
    r = commit(box, w.body["upload"], [declared("a", b"never sent")])
    assert (r.status, r.code) == (409, "incomplete")
    assert nothing_visible(box)


def test_declared_file_listed_with_other_values_is_incomplete(box: Box) -> None:
    w = write(box, [declared("a", b"abc")])
    put(box, w, "a", b"abc")
    r = commit(box, w.body["upload"], [declared("a", b"xyz")])
    assert (r.status, r.code) == (409, "incomplete")
    assert commit(box, w.body["upload"], [declared("a", b"abc")]).status == 200


@pytest.mark.parametrize("listed", [
    pytest.param([declared("a", b"x"), declared("stray", b"x")], id="name-not-in-upload"),
    pytest.param([declared("a", b"x"), declared("a", b"x")], id="name-twice"),
    pytest.param([{"name": "a", "size": 1}], id="no-sha256"),
    pytest.param("a", id="not-a-list"),
])
def test_commit_list_naming_other_or_twice_is_invalid_and_upload_stays_committable(
    box: Box, listed
) -> None:
    w = write(box, [{"name": "a"}])
    got = put(box, w, "a", b"x").body
    r = commit(box, w.body["upload"], listed)
    assert (r.status, r.code) == (400, "invalid_argument")
    assert nothing_visible(box)
    assert commit(box, w.body["upload"], [got]).status == 200


def test_mixed_declared_and_streamed_files_commit_with_only_the_streamed_listed(box: Box) -> None:
    w = write(box, [declared("meta.json", b"{}"), {"name": "model.pt"}])
    put(box, w, "meta.json", b"{}")
    got = put(box, w, "model.pt", b"m" * 300).body
    assert commit(box, w.body["upload"], [got]).status == 200
    assert {f["name"]: f["size"] for f in box.read(V1).body["files"]} == {
        "meta.json": 2, "model.pt": 300}


def test_streamed_put_past_the_limit_is_413_and_keeps_the_earlier_bytes(
    tmp_path, request, storage_kind
) -> None:
    from emulator import create_app
    from tests.support.backends import make_settings

    app = create_app(make_settings(tmp_path, request, storage_kind, max_file_size=100))
    b = Box(Http("http://localhost", app.test_client()), "p/limit", AWS)
    b.open()
    w = write(b, [{"name": "a"}])
    kept = put(b, w, "a", b"k" * 100).body
    over = put(b, w, "a", b"o" * 101)
    assert (over.status, over.code) == (413, "payload_too_large")
    assert commit(b, w.body["upload"], [kept]).status == 200
    f = b.read(V1).body["files"][0]
    assert b.http.request("GET", f["url"], key=None).content == b"k" * 100


def test_name_declared_twice_across_writes_is_invalid_and_upload_unchanged(box: Box) -> None:
    w = write(box, [declared("a", b"one")])
    put(box, w, "a", b"one")
    again = write(box, [{"name": "a"}], upload=w.body["upload"])
    assert (again.status, again.code) == (400, "invalid_argument")
    assert commit(box, w.body["upload"]).status == 200
    assert [f["sha256"] for f in box.read(V1).body["files"]] == [sha(b"one")]


def test_file_of_one_write_cannot_be_a_folder_of_another_writes_file(box: Box) -> None:
    w = write(box, [{"name": "a"}])
    r = write(box, [{"name": "a/b"}], upload=w.body["upload"])
    assert (r.status, r.code) == (400, "invalid_argument")


def test_write_into_unknown_committed_or_other_artifacts_upload_is_not_found(
    box: Box, http: Http
) -> None:
    assert (write(box, [{"name": "x"}], upload="up_nope").code) == "not_found"
    w = write(box, [declared("a", b"")])
    put(box, w, "a", b"")
    assert commit(box, w.body["upload"]).status == 200
    r = write(box, [{"name": "b"}], upload=w.body["upload"])
    assert (r.status, r.code) == (404, "not_found")
    other = Box(http, box.artifact + "x", AWS)
    other.open()
    theirs = write(other, [{"name": "b"}], version="step-00000002")
    r = write(box, [{"name": "b"}], version="step-00000002", upload=theirs.body["upload"])
    assert (r.status, r.code) == (404, "not_found")


def test_write_into_an_upload_of_another_version_is_invalid(box: Box) -> None:
    w = write(box, [{"name": "a"}])
    r = write(box, [{"name": "b"}], version="step-00000002", upload=w.body["upload"])
    assert (r.status, r.code) == (400, "invalid_argument")


def test_after_a_newer_open_neither_token_can_add_to_or_commit_the_old_upload(
    box: Box, http: Http
) -> None:
    w = write(box, [{"name": "a"}])
    got = put(box, w, "a", b"zombie").body
    newer = Box(http, box.artifact, AWS)
    assert newer.open().status == 200
    for token in (box.token, newer.token):
        r = write(box, [{"name": "b"}], upload=w.body["upload"], token=token)
        assert (r.status, r.code) == (409, "fenced")
        r = commit(box, w.body["upload"], [got], token=token)
        assert (r.status, r.code) == (409, "fenced")
    assert nothing_visible(box)


def test_commit_needs_every_file_declared_by_any_write(box: Box) -> None:
    w = write(box, [declared("a", b"a")])
    put(box, w, "a", b"a")
    write(box, [declared("b", b"b")], upload=w.body["upload"])
    r = commit(box, w.body["upload"])
    assert (r.status, r.code) == (409, "incomplete")
    assert nothing_visible(box)


def test_a_400_comes_before_a_404_and_a_404_before_a_409(box: Box, http: Http) -> None:
    w = write(box, [{"name": "a"}])
    Box(http, box.artifact, AWS).open()  # box's token is fenced from here on
    bad_name = write(box, [{"name": "../x"}], upload="up_nope")
    assert (bad_name.status, bad_name.code) == (400, "invalid_argument")
    unknown = write(box, [{"name": "b"}], upload="up_nope")
    assert (unknown.status, unknown.code) == (404, "not_found")
    twice = commit(box, "up_nope", [declared("a", b""), declared("a", b"")])
    assert (twice.status, twice.code) == (400, "invalid_argument")
    assert commit(box, "up_nope").code == "not_found"
    stray = commit(box, w.body["upload"], [declared("stray", b"")])
    assert (stray.status, stray.code) == (400, "invalid_argument")
    assert commit(box, w.body["upload"]).code == "fenced"


def test_served_emulator_takes_chunked_and_sized_streamed_puts(live_factory) -> None:
    """Through gunicorn, as a trainer streams: a chunked body (no Content-Length) and a sized
    one, each answered with what arrived, and committed as one version."""
    import requests

    emu = live_factory()
    b = Box(emu.http, "served/streams", AWS)
    assert b.open().status == 200
    w = write(b, [{"name": "chunked.bin"}, {"name": "sized.bin"}])
    urls = {f["name"]: f["url"] for f in w.body["files"]}
    parts = [bytes([i]) * 70_000 for i in range(20)]
    chunked = requests.put(urls["chunked.bin"], data=iter(parts), timeout=60)
    assert chunked.status_code == 200
    assert chunked.request.headers["Transfer-Encoding"] == "chunked"
    assert "Content-Length" not in chunked.request.headers
    whole = b"".join(parts)
    assert chunked.json() == {"name": "chunked.bin", "size": len(whole), "sha256": sha(whole)}
    sized = requests.put(urls["sized.bin"], data=b"s" * 1234, timeout=60).json()
    assert commit(b, w.body["upload"], [chunked.json(), sized]).status == 200
    f = {f["name"]: f for f in b.read(V1).body["files"]}
    assert requests.get(f["chunked.bin"]["url"], timeout=60).content == whole


def test_commit_of_files_its_storage_does_not_hold_is_incomplete(box: Box, app) -> None:
    """A node whose storage lost (or never had) a received file acknowledges nothing."""
    w = write(box, [{"name": "a"}, {"name": "b"}])
    got = [put(box, w, n, n.encode() * 10).body for n in ("a", "b")]
    backend = app.extensions["o41"]
    from emulator import db

    key = backend.conn().execute(
        db.upload_files.select().where(db.upload_files.c.name == "b",
                                       db.upload_files.c.upload_id == w.body["upload"])
    ).mappings().one()["object_key"]
    backend.storage.delete(backend.location("aws/us-east-1").bucket, key)
    r = commit(box, w.body["upload"], got)
    assert (r.status, r.code) == (409, "incomplete")
    assert nothing_visible(box)
