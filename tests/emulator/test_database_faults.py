"""A team's emulator under faults of its PostgreSQL: restarts, a frozen node's locks, keys
over restarts and nodes, nodes whose storage is not shared, many slow uploads.

Each asserts the status and code a caller sees, that no wait outlasts its bound (the HTTP
timeouts below are the bounds), and that nothing acknowledged is lost.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
import requests

import o41
from bench.postgres import Postgres, available, create_schema
from emulator.run.served import EmulatorDidNotStart
from tests.support.emulator_http import AWS, Box, Http

pytestmark = pytest.mark.skipif(not available(), reason="PostgreSQL 15 is not installed")
LOCK_TIMEOUT = 1.0  # --db-lock-timeout of these nodes: every wait below is bounded by it


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    server = Postgres(durable=True).start()  # an immediate restart keeps what it committed
    try:
        yield server
    finally:
        server.stop()


def node(live_factory, database: str, *args: str, data_dir=None):
    extra = ["--data-dir", str(data_dir)] if data_dir else []
    return live_factory("--quiet", "--workers", "1", "--database", database,
                        "--db-lock-timeout", str(LOCK_TIMEOUT), *extra, *args)


def test_restarts_of_postgresql_fail_no_save_and_lose_nothing(pg, live_factory, monkeypatch,
                                                              tmp_path):
    emu = node(live_factory, pg.database())
    monkeypatch.setenv("O41_ARTIFACTS_API_URL", emu.url + "/api/v1")
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", "ak_local")
    run = o41.open("o41://team/restarts", resume="latest")
    saved = {}
    for step, mode in enumerate(["fast", "immediate", "fast"], start=1):
        data = hashlib.sha256(str(step).encode()).digest() * 1000
        restart = threading.Thread(target=pg.restart, args=(mode,))
        restart.start()
        saved[step] = (run.save(step, {"model.bin": data}).version, data)
        restart.join()
    statuses = []
    http = Http(emu.url)
    for version, data in saved.values():
        r = http.request("GET", "/api/v1/versions/read",
                         params={"artifact": "team/restarts", "version": version, "urls": "1"})
        statuses.append(r.status)
        assert r.status == 200, r.body
        assert http.request("GET", r.body["files"][0]["url"], key=None).content == data
    assert statuses == [200, 200, 200]


def test_lost_database_answers_503_with_retry_after_never_500(pg, live_factory):
    emu = node(live_factory, pg.database())
    http = Http(emu.url)
    box = Box(http, "team/lost", AWS)
    assert box.open().status == 200
    admin = psycopg.connect(pg.url(), autocommit=True)
    try:  # every connection of the node cut, as a restart or a failover does
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'")
    finally:
        admin.close()
    replies = [box.read() for _ in range(3)]
    assert {r.status for r in replies} <= {404, 503}  # 404: no version yet, once healed
    for r in replies:
        if r.status == 503:
            assert (r.code, r.headers.get("Retry-After")) == ("unavailable", "1")
    assert box.checkpoint("step-00000001").status == 200


def test_a_frozen_nodes_lock_stalls_others_for_the_bound_only(pg, live_factory):
    """A node SIGSTOPped inside a transaction holds its row lock; stand in for it with a
    session that locks the artifact and says nothing more, under the node's own bounds."""
    database = create_schema(pg.database())
    emu = node(live_factory, database)
    http = Http(emu.url)
    box = Box(http, "team/frozen", AWS)
    assert box.open().status == 200
    ms = int(LOCK_TIMEOUT * 1000)
    frozen = psycopg.connect(database + f"%20-cidle_in_transaction_session_timeout%3D{2 * ms}")
    frozen.execute("SELECT * FROM artifacts WHERE name = 'team/frozen' FOR UPDATE")
    try:
        other = Box(Http(emu.url), "team/frozen", AWS)
        stalled = other.open()
        assert (stalled.status, stalled.code) == (503, "unavailable")
        assert box.read("step-00000001").status == 404  # reads go on meanwhile
        deadline = time.monotonic() + 120  # a hang guard
        while (reply := other.open()).status == 503 and time.monotonic() < deadline:
            time.sleep(0.2)  # the frozen session is ended after 2x the lock timeout
        assert reply.status == 200
        assert reply.body["fenced"]["holder"] == box.holder
    finally:
        frozen.close()


def test_keys_taken_out_of_the_config_stop_working_at_the_next_start(live_factory, tmp_path):
    config = tmp_path / "keys.toml"
    config.write_text('[[keys]]\nkey = "ak_team_old"\nscopes = [{prefix = "", access = "write"}]\n')
    data = tmp_path / "data"
    first = live_factory("--quiet", "--config", str(config), "--data-dir", str(data))
    for key in ("ak_team_old", "ak_local"):
        assert Box(first.http, "team/keys", AWS, key=key).open().status == 200
    minted = first.http.request("POST", "/_emulator/keys", key=None, json={
        "scopes": [{"prefix": "team/", "access": "read"}]}).body["key"]
    first.stop()
    config.write_text("default_key = false\n[[keys]]\nkey = \"ak_team_new\"\n"
                      "scopes = [{prefix = \"\", access = \"write\"}]\n")
    second = live_factory("--quiet", "--config", str(config), "--data-dir", str(data))
    for key in ("ak_team_old", "ak_local"):
        r = Box(second.http, "team/keys", AWS, key=key).open()
        assert (r.status, r.code) == (401, "unauthenticated")
    assert Box(second.http, "team/keys", AWS, key="ak_team_new").open().status == 200
    read = second.http.request("GET", "/api/v1/artifacts/read", key=minted,
                               params={"artifact": "team/keys"})
    assert read.status == 200  # minted keys outlive restarts, until revoked
    revoked = second.http.request("DELETE", "/_emulator/keys", key=None, json={"key": minted})
    assert (revoked.status, revoked.body) == (200, {"key": minted, "revoked": True})
    after = second.http.request("GET", "/api/v1/artifacts/read", key=minted,
                                params={"artifact": "team/keys"})
    assert (after.status, after.code) == (401, "unauthenticated")
    config_key = second.http.request("DELETE", "/_emulator/keys", key=None,
                                     json={"key": "ak_team_new"})
    assert (config_key.status, config_key.code) == (403, "forbidden")
    unknown = second.http.request("DELETE", "/_emulator/keys", key=None, json={"key": "ak_x"})
    assert (unknown.status, unknown.code) == (404, "not_found")


def test_a_node_with_other_keys_refuses_to_start_beside_a_live_one(pg, live_factory, tmp_path):
    database = pg.database()
    off = tmp_path / "off.toml"
    off.write_text("default_key = false\n[[keys]]\nkey = \"ak_team\"\n"
                   "scopes = [{prefix = \"\", access = \"write\"}]\n")
    first = node(live_factory, database, "--config", str(off), data_dir=tmp_path / "one")
    with pytest.raises(EmulatorDidNotStart) as refused:
        node(live_factory, database, data_dir=tmp_path / "two")
    assert "refusing to start: another node on this database" in str(refused.value)
    assert "ak_local" in str(refused.value)
    r = Box(first.http, "team/nodes", AWS, key="ak_local").open()
    assert (r.status, r.code) == (401, "unauthenticated")  # still off for everyone


def test_nodes_on_one_database_with_storage_of_their_own_refuse_to_start(pg, live_factory,
                                                                         tmp_path):
    database = pg.database()
    first = node(live_factory, database, data_dir=tmp_path / "a")
    box = Box(first.http, "team/split", AWS)
    assert box.open().status == 200 and box.checkpoint("step-00000001").status == 200
    with pytest.raises(EmulatorDidNotStart) as refused:
        node(live_factory, database, data_dir=tmp_path / "b")
    assert "does not hold the bytes of the other nodes on its database" in str(refused.value)
    # The same data dir (one storage) is welcome: a second node, or a restart.
    again = node(live_factory, database, data_dir=tmp_path / "a")
    assert again.http.request("GET", "/_emulator/health").status == 200


def test_slow_uploads_hold_no_database_connection(pg, live_factory):
    database = pg.database()
    emu = node(live_factory, database, "--threads", "64")
    box = Box(emu.http, "team/slow", AWS)
    assert box.open().status == 200
    names = [f"part-{i}" for i in range(48)]
    w = box.http.request("POST", "/api/v1/versions/write", json={
        "artifact": box.artifact, "token": box.token, "version": "step-00000001",
        "files": [{"name": n} for n in names]})
    host, port = emu.url.removeprefix("http://").split(":")
    slow = []
    for f in w.body["files"]:  # each PUT sends its head and a first chunk, then waits
        path = f["url"].split(port, 1)[1]
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(f"PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 10\r\n\r\nabc"
                  .encode())
        slow.append(s)
    try:
        others = [Box(Http(emu.url), f"team/other-{i}", AWS).open().status for i in range(8)]
        assert others == [200] * 8
        with psycopg.connect(pg.url(), autocommit=True) as admin:
            used = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                 "%s", (database.rsplit("/", 1)[1],)).fetchone()[0]
        assert used <= 8 + 24  # the pool's bound, with 48 bodies in flight
    finally:
        for s in slow:
            s.sendall(b"defghij")
        for s in slow:
            assert b" 200 " in s.recv(4096).split(b"\r\n", 1)[0] + b" "
            s.close()
    got = requests.get(emu.url + "/_emulator/health", timeout=60)
    assert got.status_code == 200
