"""The mutant proxy and its registry: enough mutants per clause, a transparent proxy, and a
few representative mutants killed by the suite. The full table runs in CI (.ci/run)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from conformance.mutants import MUTANTS
from conformance.mutants.base import Mutant, Request, Response
from conformance.mutants.forkserver import ForkServers
from conformance.mutants.proxy import HttpUpstream, MutantProxy, rewrite_urls
from conformance.mutants.runner import (
    READ_KEY,
    SCOPED_KEY,
    SCOPED_READ,
    SCOPED_WRITE,
    SPAWN_CONFIG,
    Target,
    collect_selection,
    run_mutant,
    suite_options,
)
from conformance.rules import CLAUSES
from conformance.session import SECRET_ENV
from conformance.spawn import SpawnedEmulator

pytestmark = pytest.mark.slow  # the slow tier (conftest.py): the mutant table, mutants run


def test_every_clause_has_at_least_two_mutants() -> None:
    per_clause = {c: [n for n, m in MUTANTS.items() if m.clause == c] for c in CLAUSES}
    thin = {c: names for c, names in per_clause.items() if len(names) < 2}
    assert not thin, f"clauses with fewer than 2 mutants: {thin}"
    assert len(MUTANTS) >= 60


def test_every_mutant_names_a_known_clause_and_says_what_it_breaks() -> None:
    unknown = {n: m.clause for n, m in MUTANTS.items() if m.clause not in CLAUSES}
    assert not unknown
    assert all(m.summary and m.name == n for n, m in MUTANTS.items())


def test_signed_urls_are_moved_to_the_proxy_anywhere_in_a_reply() -> None:
    reply = {"files": [{"url": "http://up:1/data/a?s=1", "name": "http://other/x"}],
             "resume_from": {"files": [{"url": "http://up:1/data/b"}]}, "n": 3}
    moved = rewrite_urls(reply, "http://up:1", "http://proxy:2")
    assert moved == {"files": [{"url": "http://proxy:2/data/a?s=1", "name": "http://other/x"}],
                     "resume_from": {"files": [{"url": "http://proxy:2/data/b"}]}, "n": 3}


def test_runner_sees_every_suite_option_it_passes() -> None:
    # The help spells them "--rules=IDS": a runner that missed one would drop it silently.
    assert {"--rules", "--first", "--scoped-read-prefix", "--expiry-target"} <= suite_options()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    proc = SpawnedEmulator(tmp_path_factory.mktemp("mutants"), config=SPAWN_CONFIG)
    url = proc.start()
    try:
        yield Target(url, proc.key or "ak_local", READ_KEY, f"{SCOPED_KEY}={SCOPED_WRITE}",
                     SCOPED_READ)
    finally:
        proc.stop()


class _CountsRequests(Mutant):
    def handle(self, request: Request, upstream: object) -> Response:
        with self.lock:
            self.state.setdefault(request.kind, []).append(request.method)
        return upstream.send(request)  # type: ignore[attr-defined]


def test_proxy_carries_a_few_megabytes_both_ways_on_the_data_plane(emulator: Target) -> None:
    counter = _CountsRequests()
    proxy = MutantProxy(HttpUpstream(emulator.url), counter)
    proxy.start()
    try:
        api = proxy.url + "/api/v1"
        auth = {"Authorization": f"Bearer {emulator.api_key}"}
        data = bytes(range(256)) * (3 * 4096)  # 3 MiB
        digest = hashlib.sha256(data).hexdigest()
        opened = requests.post(f"{api}/artifacts/open", headers=auth, timeout=30, json={
            "artifact": "proxy/big", "resume": "latest", "place": None}).json()
        write = requests.post(f"{api}/versions/write", headers=auth, timeout=30, json={
            "artifact": "proxy/big", "token": opened["token"], "version": "step-00000001",
            "files": [{"name": "w.bin", "size": len(data), "sha256": digest}]}).json()
        url = write["files"][0]["url"]
        assert url.startswith(proxy.url)
        assert requests.put(url, data=data, timeout=30).ok
        commit = requests.post(f"{api}/versions/commit", headers=auth, timeout=30, json={
            "artifact": "proxy/big", "token": opened["token"], "upload": write["upload"]})
        assert commit.ok, commit.text
        read = requests.get(f"{api}/versions/read", headers=auth, timeout=30,
                            params={"artifact": "proxy/big", "urls": "1"}).json()
        got = requests.get(read["files"][0]["url"], timeout=30)
        head = requests.head(read["files"][0]["url"], timeout=30)
        part = requests.get(read["files"][0]["url"], headers={"Range": "bytes=10-19"}, timeout=30)
    finally:
        proxy.stop()
    assert got.content == data
    assert head.status_code == 200 and head.headers["Content-Length"] == str(len(data))
    assert part.status_code == 206 and part.content == data[10:20]
    assert counter.state["data"] == ["PUT", "GET", "HEAD", "GET"]


def test_plain_proxy_passes_a_smoke_subset_and_representative_mutants_die(
    emulator: Target, tmp_path: Path
) -> None:
    options = suite_options()
    chosen = {
        "none": "FENCE-2,OPEN-2",
        "fence_stale_write_ok_same_holder": "FENCE-2",
        "open_resume_urls_swapped_between_files": "OPEN-2",
        "auth_unknown_key_open_403": "AUTH-1",
    }
    # As the table runs them: forked by its servers, each collecting only its rule's files.
    servers = ForkServers(2, {k: v for k, v in os.environ.items()
                              if k not in SECRET_ENV.values()})
    try:
        selection = collect_selection(emulator, options, servers)
        assert selection is not None and len(selection.rows) > 100
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {n: pool.submit(run_mutant, n, emulator, options, 240.0,
                                      whole_suite=False, rules=r, servers=servers,
                                      selection=selection) for n, r in chosen.items()}
            outcomes = {n: f.result() for n, f in futures.items()}
    finally:
        servers.stop()
    report = json.dumps({n: o.__dict__ for n, o in outcomes.items()}, indent=1)
    assert outcomes.pop("none").verdict == "survived", report
    assert all(o.verdict == "killed" and o.killed_by for o in outcomes.values()), report
