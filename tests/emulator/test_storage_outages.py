"""An S3 server that is down or failing is an outage, like a database that is: every call
that needs it answers 503 `unavailable` with Retry-After (never 500), nothing is
acknowledged that is not stored, and the same calls succeed once storage is back.

The emulator reaches the session's S3 server (moto, or SeaweedFS with `--s3-server
seaweedfs`) through a door the test shuts (tests/support/s3_door.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulator import create_app
from tests.support.backends import make_settings
from tests.support.emulator_http import AWS, Box, Http, Reply
from tests.support.race_tools import Background, HeldBody
from tests.support.s3_door import S3Door, s3_door

FILES = {"model.bin": b"m" * 3000, "optim.bin": b"o" * 2000}


@pytest.fixture
def door(s3_server) -> Iterator[S3Door]:
    with s3_door(s3_server.endpoint) as d:
        yield d


@pytest.fixture
def http(tmp_path, request, s3_server, door: S3Door) -> Http:
    from dataclasses import replace

    settings = replace(make_settings(tmp_path, request, "s3"), s3_endpoint=door.endpoint)
    return Http("http://localhost", create_app(settings).test_client())


def unavailable(r: Reply) -> bool:
    return (r.status, r.code) == (503, "unavailable") and int(r.headers["Retry-After"]) > 0


def put_all(box: Box, written: Reply) -> list[Reply]:
    return [box.http.request("PUT", f["url"], key=None, data=FILES[f["name"]])
            for f in written.body["files"]]


def test_puts_commits_and_gets_during_an_s3_outage_are_503_and_succeed_after(http, door,
                                                                            artifact):
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    written = box.write("step-00000001", FILES)
    assert written.status == 200
    door.shut()
    assert all(unavailable(r) for r in put_all(box, written))
    door.open()
    # Nothing the outage's PUTs sent was counted: the commit finds no file received.
    assert (box.commit(written.body["upload"]).status,
            box.commit(written.body["upload"]).code) == (409, "incomplete")
    assert [r.status for r in put_all(box, written)] == [200, 200]
    door.shut()
    assert unavailable(box.commit(written.body["upload"]))  # its files cannot be looked at
    door.open()
    assert box.commit(written.body["upload"]).status == 200
    read = box.read("step-00000001")
    door.shut()
    assert all(unavailable(http.request("GET", f["url"], key=None)) for f in read.body["files"])
    door.open()
    got = {f["name"]: http.request("GET", f["url"], key=None).content for f in read.body["files"]}
    assert got == FILES


@pytest.mark.parametrize("status", [500, 503])
def test_an_s3_server_answering_5xx_is_503_not_500(http, door, artifact, status):
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    written = box.write("step-00000001", FILES)
    door.fail(status)
    assert all(unavailable(r) for r in put_all(box, written))
    door.open()
    assert [r.status for r in put_all(box, written)] == [200, 200]
    assert box.commit(written.body["upload"]).status == 200


def test_a_streamed_put_whose_storage_goes_away_in_flight_is_503_and_kept_nowhere(
        http, door, artifact):
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    data = b"s" * (2 << 20)
    written = box.write("step-00000001", {"big.bin": data})
    url = written.body["files"][0]["url"]
    body = HeldBody(data, 1 << 20)
    put = Background(lambda: http.request("PUT", url, key=None, data=body))
    put.start()
    assert body.reached.wait(30)
    door.shut()  # half the body is in, the storage goes
    body.release()
    assert unavailable(put.outcome())
    door.open()
    commit = box.commit(written.body["upload"])
    assert (commit.status, commit.code) == (409, "incomplete")
    assert http.request("PUT", url, key=None, data=data).status == 200
    assert box.commit(written.body["upload"]).status == 200
    [f] = box.read("step-00000001").body["files"]
    assert http.request("GET", f["url"], key=None).content == data
