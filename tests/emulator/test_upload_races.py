"""A committed version never changes: the three upload races of issue 11, each forced into
its worst interleaving on purpose (a body held half-sent, or a request held at a pause
point in the server), on both storage backends."""

from __future__ import annotations

import hashlib
import os
import time

import pytest
from sqlalchemy import text

from emulator.storage import ObjectMissing
from tests.support.emulator_http import AWS, Box, Http, sha
from tests.support.race_tools import Background, HeldBody, RawPut, paused_at

SIZE = 600_000  # several chunks of the data plane's reader, on both backends


def later() -> float:
    """A clock two days ahead: past every upload's 24 h lifetime."""
    return time.time() + 2 * 86400


def held_put(app, url: str, body: HeldBody):
    """PUT `body` through a test client of its own (the call blocks while it is held)."""
    return app.test_client().put(url, input_stream=body, content_length=len(body.data))


def stored(app, upload: str, name: str) -> tuple[str, bytes]:
    """The file's recorded sha256 and the bytes at its recorded object key."""
    backend = app.extensions["o41"]
    row = backend.conn().execute(
        text("SELECT received_sha256, object_key FROM upload_files "
             "WHERE upload_id = :upload AND name = :name"),
        {"upload": upload, "name": name}).mappings().one()
    bucket = backend.location("aws/us-east-1").bucket
    size = backend.storage.size(bucket, row["object_key"])
    return row["received_sha256"], b"".join(backend.storage.read(bucket, row["object_key"], 0,
                                                                  size))


def assert_serves(http: Http, box: Box, version: str, name: str, data: bytes) -> None:
    """The committed version lists sha256(data) and its URL serves exactly `data`."""
    r = box.read(version)
    assert r.status == 200, r.body
    (f,) = [f for f in r.body["files"] if f["name"] == name]
    assert f["sha256"] == sha(data) and f["size"] == len(data)
    got = http.request("GET", f["url"], key=None)
    assert got.status == 200 and hashlib.sha256(got.content).hexdigest() == sha(data)


@pytest.fixture
def box(http, artifact) -> Box:
    b = Box(http, artifact, AWS)
    assert b.open().status == 200
    return b


# Race 1: a PUT still in flight when the commit lands.

@pytest.mark.parametrize("then", ["finish", "hang_up"])
def test_put_in_flight_when_commit_lands_cannot_change_the_version(app, http, box, then):
    good, other = os.urandom(SIZE), os.urandom(SIZE)
    w = box.write("step-00000001", {"m": good})
    box.upload(w, {"m": good})
    url = w.body["files"][0]["url"]
    late = HeldBody(other, SIZE // 2)
    put = Background(held_put, app, url, late)
    put.start()
    assert late.reached.wait(30)
    assert box.commit(w.body["upload"]).status == 200
    late.release(hang_up=then == "hang_up")
    r = put.outcome()
    if then == "finish":
        assert (r.status_code, r.get_json()["error"]["code"]) == (409, "version_exists")
    else:  # a body cut short is never stored, whatever the state
        assert r.status_code == 400 and r.get_json()["error"]["code"] == "invalid_argument"
    assert_serves(http, box, "step-00000001", "m", good)


def test_put_after_commit_is_a_conflict_and_stores_nothing(http, box):
    good = os.urandom(1000)
    w = box.write("step-00000001", {"m": good})
    box.upload(w, {"m": good})
    assert box.commit(w.body["upload"]).status == 200
    r = http.request("PUT", w.body["files"][0]["url"], key=None, data=b"x" * 1000)
    assert (r.status, r.code) == (409, "version_exists")
    assert_serves(http, box, "step-00000001", "m", good)


# Race 2: two PUTs to one URL at once.

def test_put_held_before_it_becomes_visible_loses_to_the_commit(app, http, box, monkeypatch):
    good, wrong = os.urandom(SIZE), os.urandom(SIZE)
    w = box.write("step-00000001", {"m": good})
    url = w.body["files"][0]["url"]
    with paused_at(monkeypatch, "put:stored", "wrong-put") as (reached, release):
        put = Background(http.request, "PUT", url, name="wrong-put")
        put.args = ("PUT", url)
        put.fn = lambda *a: Http("http://localhost", app.test_client()).request(
            *a, key=None, data=wrong)
        put.start()
        assert reached.wait(30)  # the wrong body is stored whole, not yet current
        box.upload(w, {"m": good})
        assert box.commit(w.body["upload"]).status == 200
        release.set()
        r = put.outcome()
    assert (r.status, r.code) == (409, "version_exists")
    assert_serves(http, box, "step-00000001", "m", good)


@pytest.mark.parametrize("held_first", ["good", "wrong"])
def test_recorded_sha256_is_always_that_of_the_stored_bytes(app, http, box, monkeypatch,
                                                            held_first):
    """The interleaving that used to record one body's sha256 beside the other's bytes:
    one PUT stored and held, the other PUT done, then the held one finishes."""
    good, wrong = os.urandom(SIZE), os.urandom(SIZE)
    w = box.write("step-00000001", {"m": good})
    url = w.body["files"][0]["url"]
    held, other = (good, wrong) if held_first == "good" else (wrong, good)
    with paused_at(monkeypatch, "put:stored", "held-put") as (reached, release):
        put = Background(lambda: Http("http://localhost", app.test_client()).request(
            "PUT", url, key=None, data=held), name="held-put")
        put.start()
        assert reached.wait(30)
        assert http.request("PUT", url, key=None, data=other).status == 200
        release.set()
        assert put.outcome().status == 200
    recorded, data = stored(app, w.body["upload"], "m")
    assert data == held and recorded == sha(held)  # the last to become visible wins, whole
    c = box.commit(w.body["upload"])
    if held is good:
        assert c.status == 200
        assert_serves(http, box, "step-00000001", "m", good)
    else:
        assert (c.status, c.code) == (409, "incomplete")


# Race 3: reclaiming expired uploads while a commit or a PUT is under way.

def test_commit_of_an_expired_upload_is_refused_and_lists_nothing(app, http, box):
    good = os.urandom(1000)
    w = box.write("step-00000001", {"m": good})
    box.upload(w, {"m": good})
    app.extensions["o41"].now = later  # expired, not yet reclaimed
    c = box.commit(w.body["upload"])
    assert (c.status, c.code) == (404, "not_found")
    assert http.request("GET", "/api/v1/versions/list",
                        params={"artifact": box.artifact}).body["versions"] == []


def test_reclaim_and_commit_cannot_both_win(app, http, box, monkeypatch):
    from emulator.rules.uploads import reclaim_expired_uploads

    backend = app.extensions["o41"]
    good = os.urandom(SIZE)
    w = box.write("step-00000001", {"m": good})
    box.upload(w, {"m": good})
    _, before = stored(app, w.body["upload"], "m")
    assert before == good
    backend.now = later
    with paused_at(monkeypatch, "reclaim:marked", "reclaim") as (reached, release):
        reclaim = Background(reclaim_expired_uploads, backend, name="reclaim")
        reclaim.start()
        assert reached.wait(30)  # marked, bytes not yet deleted: the old window
        c = box.commit(w.body["upload"])
        release.set()
        assert reclaim.outcome() == 1
    assert (c.status, c.code) == (404, "not_found")
    r = box.read("step-00000001")
    assert (r.status, r.code) == (404, "not_found")


def test_committed_upload_survives_a_later_reclaim(app, http, box):
    from emulator.rules.uploads import reclaim_expired_uploads

    good = os.urandom(SIZE)
    assert box.checkpoint("step-00000001", {"m": good}).status == 200
    app.extensions["o41"].now = later
    assert reclaim_expired_uploads(app.extensions["o41"]) == 0
    assert_serves(http, box, "step-00000001", "m", good)


def test_put_in_flight_when_its_upload_is_reclaimed_is_refused_and_kept_nowhere(
        app, http, box, monkeypatch):
    from emulator.rules.uploads import reclaim_expired_uploads

    backend = app.extensions["o41"]
    good = os.urandom(SIZE)
    w = box.write("step-00000001", {"m": good})
    keys = []
    monkeypatch.setattr(backend.storage, "put", _recording(backend.storage.put, keys))
    body = HeldBody(good, SIZE // 2)
    put = Background(held_put, app, w.body["files"][0]["url"], body)
    put.start()
    assert body.reached.wait(30)
    backend.now = later
    assert reclaim_expired_uploads(backend) == 1
    body.release()
    r = put.outcome()
    assert (r.status_code, r.get_json()["error"]["code"]) == (409, "incomplete")
    bucket = backend.location("aws/us-east-1").bucket
    assert len(keys) == 1
    with pytest.raises(ObjectMissing):
        backend.storage.size(bucket, keys[0])
    c = box.commit(w.body["upload"])
    assert (c.status, c.code) == (404, "not_found")


def _recording(put, keys: list):
    def wrapper(bucket, key, stream):
        keys.append(key)
        return put(bucket, key, stream)
    return wrapper


# The same attack as the report's, over a real socket against a served emulator.

@pytest.mark.parametrize("storage", ["fs", pytest.param("s3", marks=pytest.mark.s3)])
def test_half_sent_put_over_a_socket_cannot_change_a_committed_version(live_factory, artifact,
                                                                       request, storage):
    args = []
    if storage == "s3":
        args = request.getfixturevalue("s3_server").serve_args()
    emu = live_factory(*args)
    box = Box(emu.http, artifact, AWS)
    assert box.open().status == 200
    good, other = os.urandom(3_000_000), os.urandom(3_000_000)
    w = box.write("step-00000001", {"m": good})
    box.upload(w, {"m": good})
    url = w.body["files"][0]["url"]
    finishing, closing = RawPut(url, len(other)), RawPut(url, len(other))
    finishing.send(other[: len(other) // 2])
    closing.send(other[: len(other) // 2])
    assert box.commit(w.body["upload"]).status == 200
    closing.hang_up()
    finishing.send(other[len(other) // 2 :])
    status, body = finishing.reply()
    assert (status, body["error"]["code"]) == (409, "version_exists")
    assert_serves(emu.http, box, "step-00000001", "m", good)
