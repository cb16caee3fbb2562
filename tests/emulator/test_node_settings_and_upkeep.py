"""What nodes on one database must agree on, and what a node does without traffic:

- a node whose URL lifetime differs from a live node's refuses to start (a delete on it
  would end the other's URLs before the expiry they claim), as one with other keys does;
- a node beats while idle, so a team with no requests for a minute is still not re-keyed;
- the bytes of deleted versions go once their last URL expired, with no other traffic.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.postgres import Postgres, available
from emulator.run.served import EmulatorDidNotStart
from emulator.state.nodes import BEAT, LIVE_FOR
from tests.support.emulator_http import AWS, Box

DEADLINE = 120.0  # what a loaded machine may take; the condition usually holds in seconds


@pytest.fixture(scope="module")
def pg():
    if not available():
        pytest.skip("PostgreSQL 15 is not installed")
    server = Postgres().start()
    try:
        yield server
    finally:
        server.stop()


def node(live_factory, database: str, data_dir: Path, *args: str):
    return live_factory("--quiet", "--workers", "1", "--database", database,
                        "--data-dir", str(data_dir), *args)


def test_a_node_with_another_url_lifetime_refuses_to_start_beside_a_live_one(pg, live_factory,
                                                                             tmp_path):
    database = pg.database()
    first = node(live_factory, database, tmp_path / "one", "--url-lifetime", "60")
    with pytest.raises(EmulatorDidNotStart) as refused:
        node(live_factory, database, tmp_path / "two", "--url-lifetime", "3")
    said = str(refused.value)
    assert "refusing to start: another node on this database" in said
    assert "url_lifetime = 3 s" in said and "url_lifetime = 60 s" in said
    assert first.http.request("GET", "/_emulator/health").status == 200


@pytest.mark.slow
def test_an_idle_teams_keys_are_not_changed_by_a_node_with_the_defaults(pg, live_factory,
                                                                        tmp_path):
    """No request reaches the team's node for longer than a node counts as live without a
    beat (65 s), yet a node started with the defaults (`ak_local`) is refused."""
    database = pg.database()
    off = tmp_path / "off.toml"
    off.write_text("default_key = false\n[[keys]]\nkey = \"ak_team\"\n"
                   "scopes = [{prefix = \"\", access = \"write\"}]\n")
    team = node(live_factory, database, tmp_path / "team", "--config", str(off))
    time.sleep(LIVE_FOR + BEAT)  # idle: no request at all
    with pytest.raises(EmulatorDidNotStart) as refused:
        node(live_factory, database, tmp_path / "defaults")
    assert "ak_local" in str(refused.value)
    r = Box(team.http, "team/idle", AWS, key="ak_local").open()
    assert (r.status, r.code) == (401, "unauthenticated")


def stored_files(data_dir: Path) -> set[str]:
    buckets = data_dir / "buckets"
    return {p.name for p in buckets.rglob("*.bin") if p.is_file()}


def test_deleted_bytes_go_after_their_last_url_expired_with_no_other_traffic(live_factory,
                                                                            tmp_path):
    """Keep-the-last-1 with URLs of one second: after the deletes, no call at all, and the
    deleted versions' objects leave storage by themselves; the kept one stays."""
    data = tmp_path / "d"
    emu = live_factory("--quiet", "--workers", "1", "--storage", "fs", "--data-dir", str(data),
                       "--url-lifetime", "1")
    box = Box(emu.http, "team/keep-last", AWS)
    assert box.open().status == 200
    for step in range(1, 5):
        name = f"step-{step:08d}"
        assert box.checkpoint(name, {f"{name}.bin": name.encode() * 100}).status == 200
        if step > 1:
            previous = f"step-{step - 1:08d}"
            r = box.http.request("POST", "/api/v1/versions/delete", json={
                "artifact": box.artifact, "token": box.token, "version": previous})
            assert r.status == 200, r.body
    assert len(stored_files(data)) >= 2  # the last deleted one's URLs were live just now
    deadline = time.monotonic() + DEADLINE
    while stored_files(data) != {"step-00000004.bin"} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stored_files(data) == {"step-00000004.bin"}
