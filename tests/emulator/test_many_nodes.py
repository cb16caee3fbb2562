"""Many nodes, one truth: emulator processes on separate data dirs, sharing one PostgreSQL
and one S3 server, behave as one emulator (tokens, keys, signed URLs, chaos, usage, fencing).

The session's PostgreSQL is used under O41_TEST_DATABASE=postgresql; otherwise this module
starts a cluster of its own (skipped where PostgreSQL 15 is not installed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from bench.postgres import ENV_VAR, Postgres, available, create_schema
from tests.emulator.test_race_stress import LIFETIME, run_stress
from tests.emulator.test_races import race_boxes
from tests.support.backends import ON_POSTGRES
from tests.support.emulator_http import AWS, GCP, Box, Http, SpreadHttp, sha


@pytest.fixture(scope="module")
def postgres_database() -> Iterator[str]:
    if ON_POSTGRES:
        yield os.environ[ENV_VAR]
        return
    if not available():
        pytest.skip("PostgreSQL 15 is not installed (apt-get install -y postgresql)")
    pg = Postgres().start()
    try:
        yield pg.database()
    finally:
        pg.stop()


@pytest.fixture
def nodes(live_factory, postgres_database, request):
    """`nodes(n, *args)`: n served emulators on one new schema and the session's S3 server."""
    s3 = request.getfixturevalue("s3_server").serve_args()

    def start(n: int, *args: str) -> tuple:
        database = create_schema(postgres_database)
        common = ["--quiet", "--workers", "1", "--database", database, *s3, *args]
        return tuple(live_factory(*common) for _ in range(n))

    return start


def on(node, url: str) -> str:
    """`url` (signed by any node) sent to `node` instead."""
    u = urlsplit(url)
    return f"{node.url}{u.path}?{u.query}"


def test_a_token_and_signed_urls_from_one_node_work_on_the_other(nodes, artifact):
    a, b = nodes(2)
    writer = Box(a.http, artifact, AWS)
    assert writer.open().status == 200
    files = {"model.bin": b"weights" * 1000}
    w = writer.write("step-00000001", files)  # its PUT URL signed by node A
    assert w.status == 200, w.body
    for f in w.body["files"]:
        r = b.http.request("PUT", on(b, f["url"]), key=None, data=files[f["name"]])
        assert r.status == 200, r.body
    on_b = Box(b.http, artifact, AWS, holder=writer.holder, token=writer.token)
    c = on_b.commit(w.body["upload"])  # A's token, on node B
    assert c.status == 200, c.body
    r = on_b.read("latest")  # GET URLs signed by node B, read from node A
    assert r.status == 200, r.body
    (f,) = r.body["files"]
    got = a.http.request("GET", on(a, f["url"]), key=None)
    assert (got.status, sha(got.content)) == (200, sha(files["model.bin"]))
    unknown = Box(b.http, artifact, AWS, token="tk_never-issued")
    refused = unknown.write("step-00000002", files)
    assert (refused.status, refused.code) == (400, "invalid_argument")


def test_an_open_on_one_node_fences_the_holder_on_the_other(nodes, artifact):
    a, b = nodes(2)
    first = Box(a.http, artifact, AWS)
    assert first.open().body["epoch"] == 1
    assert first.checkpoint("step-00000001").status == 200
    second = Box(b.http, artifact, GCP)
    opened = second.open("latest")
    assert opened.body["epoch"] == 2
    assert opened.body["fenced"] == {"epoch": 1, "holder": first.holder}
    assert opened.body["resume_from"]["version"] == "step-00000001"
    late = first.write("step-00000002", {"m": b"late"})  # back on node A
    assert (late.status, late.code) == (409, "fenced")


def test_keys_chaos_rules_and_usage_are_shared_by_every_node(nodes, artifact):
    a, b = nodes(2)
    made = a.http.request("POST", "/_emulator/keys", key=None, json={
        "scopes": [{"prefix": artifact.split("/")[0] + "/", "access": "write"}]})
    assert made.status == 201, made.body
    key = made.body["key"]
    box = Box(b.http, artifact, AWS, key=key)  # a key made on node A, used on node B
    assert box.open().status == 200
    rule = {"rules": [{"operation": "versions/read", "status": 503, "times": 1}]}
    assert a.http.request("POST", "/_emulator/chaos", key=None, json=rule).status == 200
    assert box.checkpoint("step-00000001").status == 200
    spread = SpreadHttp([a.url, b.url])
    reads = [Box(spread, artifact, GCP, key=key).read("latest") for _ in range(4)]
    assert sorted(r.status for r in reads) == [200, 200, 200, 503]  # fired once in all
    for r in reads:
        if r.status == 200:
            got = spread.request("GET", r.body["files"][0]["url"], key=None)
            assert got.status == 200
    usage_a = Box(a.http, artifact, AWS, key=key).usage().body
    usage_b = box.usage().body
    assert usage_a == usage_b
    read = sum(t["bytes"] for t in usage_a["transfers"] if t["direction"] == "read")
    assert read == 3 * len(b"step-00000001" * 10)  # three downloads over two nodes


def test_racing_boxes_spread_over_two_nodes_keep_fencing(nodes, artifact):
    a, b = nodes(2, "--threads", "8")
    race_boxes([a.url, b.url], artifact)


@pytest.mark.slow
def test_racing_puts_commits_and_reclaims_over_two_nodes_change_no_version(nodes, tmp_path):
    short = tmp_path / "short.toml"
    short.write_text(f"upload_lifetime = {LIFETIME:g}\n")
    pair = tuple(n.url for n in nodes(2))
    reclaiming = tuple(n.url for n in nodes(2, "--config", str(short)))

    class Spread:
        def __init__(self, urls: tuple[str, ...]) -> None:
            self.url = urls

    run_stress({"late_put": Spread(pair), "twin_puts": Spread(pair),
                "reclaim": Spread(reclaiming)}, "two nodes")


def test_the_settings_table_takes_the_database_from_the_environment(live_factory,
                                                                    postgres_database):
    database = create_schema(postgres_database)
    emu = live_factory("--quiet", env={ENV_VAR: database})
    assert "metadata postgresql://postgres@127.0.0.1" in emu.log()
    http = Http(emu.url)
    assert http.request("GET", "/_emulator/health").status == 200
