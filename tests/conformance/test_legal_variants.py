"""Legal variants (conformance/mutants/legal*.py): each really changes what the contract
leaves open and keeps what it fixes, and the suite passes through all of them at once.

The whole suite against every variant is ``python -m conformance.mutants legal --spawn``;
here the chained variant runs the tests of the rules whose replies the variants touch most.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conformance.mutants.base import Request, Response
from conformance.mutants.legal import LEGAL, Chain, make_variant
from conformance.mutants.legal_runner import run_variant
from conformance.mutants.runner import (
    READ_KEY,
    SCOPED_KEY,
    SCOPED_READ,
    SCOPED_WRITE,
    SPAWN_CONFIG,
    Target,
    suite_options,
)
from conformance.spawn import SpawnedEmulator

ORIGIN = "http://proxy:1"


class FakeUpstream:
    """An implementation stand-in: answers with ``reply(request)`` and records requests."""

    public_origin = ORIGIN

    def __init__(self, reply: Callable[[Request], Response]) -> None:
        self.reply = reply
        self.seen: list[Request] = []

    def send(self, request: Request) -> Response:
        self.seen.append(request)
        return self.reply(request)


def _json(status: int, body: object) -> Response:
    return Response(status, (("Content-Type", "application/json"),), json.dumps(body).encode())


def _post(endpoint: str, body: object) -> Request:
    return Request("POST", "/api/v1/" + endpoint, (), (), json.dumps(body).encode())


def test_every_variant_is_registered_with_a_summary_and_all_chains_them() -> None:
    make_variant("all")
    assert len(LEGAL) >= 12
    assert all(cls.summary and cls.name == name for name, cls in LEGAL.items())
    chain = make_variant("all")
    assert isinstance(chain, Chain) and len(chain.parts) == len(LEGAL)


def test_errors_reworded_keeps_status_and_code() -> None:
    up = FakeUpstream(lambda r: Response.error(409, "fenced", "stale token"))
    resp = make_variant("errors-reworded").handle(_post("versions/write", {}), up)
    err = resp.json()["error"]
    assert resp.status == 409 and err["code"] == "fenced" and err["message"] != "stale token"


def test_epoch_jumps_keep_every_epoch_greater_than_the_one_before() -> None:
    epochs = iter(range(1, 6))
    up = FakeUpstream(lambda r: _json(200, {"epoch": next(epochs), "fenced": None}))
    variant = make_variant("epoch-jumps")
    seen = [variant.handle(_post("artifacts/open", {}), up).json()["epoch"] for _ in range(5)]
    assert seen == sorted(set(seen)) and seen != list(range(1, 6))


def test_opaque_ids_are_translated_back_and_unknown_ones_pass_unchanged() -> None:
    up = FakeUpstream(lambda r: _json(200, {"token": "T-real", "holder": "made-up-1"}))
    variant = make_variant("opaque-ids")
    opened = variant.handle(_post("artifacts/open", {"artifact": "p/a"}), up).json()
    assert opened["token"] != "T-real" and opened["holder"] != "made-up-1"
    variant.handle(_post("versions/write", {"token": opened["token"],
                                            "holder": opened["holder"]}), up)
    assert up.seen[-1].json() == {"token": "T-real", "holder": "made-up-1"}
    variant.handle(_post("versions/write", {"token": "bogus"}), up)
    assert up.seen[-1].json() == {"token": "bogus"}


def test_reshaped_urls_serve_the_real_url_and_refuse_a_changed_signature() -> None:
    def reply(r: Request) -> Response:
        if r.kind == "data":
            return Response(200, (), b"bytes of " + r.path.encode())
        return _json(200, {"files": [{"name": "m", "url": ORIGIN + "/d/m?s=abc"}]})

    up, variant = FakeUpstream(reply), make_variant("reshaped-urls")
    url = variant.handle(_post("versions/read", {}), up).json()["files"][0]["url"]
    assert url.startswith(ORIGIN + "/blob/")
    path, _, query = url[len(ORIGIN):].partition("?")
    sig = query.removeprefix("sig=")
    good = variant.handle(Request("GET", path, (("sig", sig),)), up)
    changed = sig[:-1] + ("1" if sig.endswith("0") else "0")
    bad = variant.handle(Request("GET", path, (("sig", changed),)), up)
    assert good.body == b"bytes of /d/m"
    assert bad.status == 403 and bad.json()["error"]["code"] == "forbidden"


def test_hex_signatures_serve_in_either_case_and_refuse_a_changed_digit() -> None:
    def reply(r: Request) -> Response:
        if r.kind == "data":
            return Response(200, (), b"bytes of " + r.path.encode())
        return _json(200, {"files": [{"name": "m", "url": ORIGIN + "/d/m?s=abc"}]})

    up, variant = FakeUpstream(reply), make_variant("hex-signatures-any-case")
    url = variant.handle(_post("versions/read", {}), up).json()["files"][0]["url"]
    path, _, query = url[len(ORIGIN):].partition("?")
    sig = query.removeprefix("sig=")
    assert path.startswith("/hexblob/") and sig == sig.upper() and int(sig, 16) >= 0
    for given in (sig, sig.lower(), sig.swapcase()):
        got = variant.handle(Request("GET", path, (("sig", given),)), up)
        assert got.status == 200 and got.body == b"bytes of /d/m"
    changed = sig[:-1] + ("1" if sig.endswith("0") else "0")
    bad = variant.handle(Request("GET", path, (("sig", changed),)), up)
    assert bad.status == 403 and bad.json()["error"]["code"] == "forbidden"


def test_conflicts_at_commit_accept_the_write_and_refuse_the_commit_with_its_code() -> None:
    def reply(r: Request) -> Response:
        if r.endpoint == "artifacts/open":
            return _json(200, {"token": "T", "write_location": {
                "cloud": "aws", "region": "us-east-1", "route": "local"}})
        return Response.error(409, "version_exists", "already committed")

    up, variant = FakeUpstream(reply), make_variant("conflicts-at-commit")
    variant.handle(_post("artifacts/open", {"artifact": "p/a"}), up)
    write = variant.handle(_post("versions/write", {
        "artifact": "p/a", "token": "T", "version": "step-00000001",
        "files": [{"name": "m", "size": 3, "sha256": "0" * 64}]}), up)
    assert write.status == 200
    url = write.json()["files"][0]["url"][len(ORIGIN):]
    assert variant.handle(Request("PUT", url, (), (), b"abc"), up).status == 200
    assert variant.handle(Request("PUT", url, (), (), b"abcd"), up).status == 413
    commit = variant.handle(_post("versions/commit", {
        "artifact": "p/a", "token": "T", "upload": write.json()["upload"]}), up)
    assert commit.status == 409 and commit.json()["error"]["code"] == "version_exists"


def test_empty_query_parts_are_added_to_urls_and_dropped_before_the_implementation() -> None:
    def reply(r: Request) -> Response:
        if r.kind == "data":
            return Response(200, (), repr(r.query).encode())
        return _json(200, {"files": [{"name": "m", "url": ORIGIN + "/d/m?s=abc"},
                                     {"name": "n", "url": ORIGIN + "/d/n"}]})

    up, variant = FakeUpstream(reply), make_variant("empty-query-parts")
    files = variant.handle(_post("versions/read", {}), up).json()["files"]
    assert [f["url"] for f in files] == [ORIGIN + "/d/m?s=abc&place=&trace",
                                         ORIGIN + "/d/n?place=&trace"]
    got = variant.handle(Request("GET", "/d/m", (("s", "abc"), ("place", ""), ("trace", ""))), up)
    assert up.seen[-1].query == (("s", "abc"),) and got.status == 200


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    proc = SpawnedEmulator(tmp_path_factory.mktemp("legal"), config=SPAWN_CONFIG)
    url = proc.start()
    try:
        yield Target(url, proc.key or "ak_local", READ_KEY, f"{SCOPED_KEY}={SCOPED_WRITE}",
                     SCOPED_READ)
    finally:
        proc.stop()


@pytest.mark.slow
def test_suite_passes_through_every_legal_variant_at_once(
    emulator: Target, tmp_path: Path
) -> None:
    rules = "FENCE-2,OPEN-2,VER-2,VER-3,READ-3,READ-4,USAGE-1"
    verdict = run_variant("all", emulator, suite_options(), 300.0, ("--rules", rules))
    assert verdict.verdict == "passed", verdict
