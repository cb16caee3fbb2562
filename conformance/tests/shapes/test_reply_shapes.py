"""Reply shapes of the HTTP API section of docs/contract.md (API-1, READ-1.c, FENCE-2.f).

Only what the contract fixes is checked: field presence, types, the values the contract
defines (``step`` is the number of the name, ``size`` the sum of the files, ``latest`` null
when there is none). Message wording, token, upload and holder formats, URL shapes, extra
fields and the exact timestamp format stay open.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from conformance.actions import Box
from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.client import parse_time
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal
from conformance.signatures import tampered_url

DAY = 86_400.0
LISTED_FIELDS = ("artifact", "version", "step", "location", "size", "created_at", "epoch",
                 "holder", "route", "cross_cloud")


def _timestamp(value: Any, reply: Reply, clause: str, what: str) -> float:
    """A timestamp (ISO 8601 or epoch seconds or milliseconds) near the server's clock."""
    try:
        when = parse_time(value)
    except (TypeError, ValueError):
        when = None
    if when is not None and when > 1e11:
        when /= 1000.0
    check(when is not None and abs(when - reply.server_time) < DAY, clause,
          f"{what} is not a timestamp near now: {value!r}")
    return float(when)  # type: ignore[arg-type]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_version(body: dict, box: Box, name: str, files: dict[str, bytes], reply: Reply,
                   what: str, *, listed: bool = False) -> None:
    """One Version (or, ``listed``, a Version without files) as the contract shapes it."""
    clause = "READ-1.c" if listed else "API-1.b"
    for key in LISTED_FIELDS:
        check(key in body, clause, f"{what}: no {key!r} in {sorted(body)}")
    check_equal((body["artifact"], body["version"]), (box.artifact, name), clause, what)
    check(_is_int(body["step"]) and body["step"] == int(name[5:]), clause,
          f"{what}: step {body['step']!r} is not the number of {name}")
    check(_is_int(body["size"]) and body["size"] == sum(map(len, files.values())), clause,
          f"{what}: size {body['size']!r}, files hold {sum(map(len, files.values()))}")
    loc = body["location"]
    check(isinstance(loc, dict) and all(isinstance(loc.get(k), str) and loc[k]
                                        for k in ("cloud", "region")),
          clause, f"{what}: location {loc!r} is not {{cloud, region}}")
    check_equal((body["epoch"], body["holder"]), (box.epoch, box.holder), clause,
                f"{what}: epoch and holder of the open that wrote it")
    _timestamp(body["created_at"], reply, clause, f"{what}: created_at")
    if listed:
        check("files" not in body, "READ-1.c", f"{what}: a listed Version carries files")
        return
    specs = {f.name: (f.size, f.sha256) for f in file_specs(files)}
    got = body.get("files")
    check(isinstance(got, list), clause, f"{what}: files is {got!r}")
    seen = {f.get("name"): (f.get("size"), str(f.get("sha256", "")).lower()) for f in got}
    check_equal(seen, specs, clause, f"{what}: files name, size, sha256")


@pytest.mark.rule("API-1.b")
def test_version_fields_are_shaped_as_the_contract_says(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("shape-v"), "box-a", o41_env.topology.locations[0])
    for step in (9, 120, 12_345_678):
        name = f"step-{step:08d}"
        files = make_files({"model.pt": step % 997 + 1, "opt/state": 7}, step)
        body = commit_ok(o41_api, a, name, files)
        _check_version(body, a, name, files, o41_api.read(a.artifact, name), f"commit {name}")
        for place in (None, o41_env.topology.locations[-1]):
            reply = o41_api.read(a.artifact, name, place=place)
            got = expect_ok(reply, "API-1.b", f"read {name}")
            _check_version(got, a, name, files, reply, f"read {name} at {place}")


@pytest.mark.rule("READ-1.c")
def test_list_is_in_step_order_without_files(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("shape-l")
    a = open_box(o41_api, name, "box-a", o41_env.topology.locations[0])
    written: list[tuple[Box, str, dict[str, bytes]]] = []
    for step in (3, 40):
        files = make_files({"m": step}, step)
        commit_ok(o41_api, a, f"step-{step:08d}", files)
        written.append((a, f"step-{step:08d}", files))
    b = open_box(o41_api, name, "box-b", o41_env.topology.locations[-1])
    for step in (500, 6000):
        files = make_files({"m": step % 50}, step)
        commit_ok(o41_api, b, f"step-{step:08d}", files)
        written.append((b, f"step-{step:08d}", files))
    reply = o41_api.list(name)
    listed = expect_ok(reply, "READ-1.c", "list").get("versions")
    check(isinstance(listed, list), "READ-1.c", f"versions is {listed!r}")
    check_equal([v.get("version") for v in listed], [w[1] for w in written], "READ-1.c",
                "list in step order")
    for (box, version, files), got in zip(written, listed, strict=True):
        _check_version(got, box, version, files, reply, f"listed {version}", listed=True)


@pytest.mark.rule("API-1.c")
def test_urls_come_with_expiry_and_urls_0_gives_none(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("shape-u")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"a": 5, "b/c": 0}))
    reply = o41_api.read(name, urls=True)
    body = expect_ok(reply, "API-1.c", "read urls=1")
    check(all(isinstance(f.get("url"), str) and f["url"] for f in body["files"]), "API-1.c",
          f"urls=1 left a file without url: {body['files']}")
    when = _timestamp(body.get("urls_expire_at"), reply, "API-1.c", "urls_expire_at")
    check(when > reply.server_time - 1, "API-1.c", "urls_expire_at is in the past")
    plain = expect_ok(o41_api.read(name, urls=False), "API-1.c", "read urls=0")
    check(not any(f.get("url") for f in plain["files"]), "API-1.c",
          f"urls=0 still gave urls: {plain['files']}")
    opened = o41_api.open(name, "latest", None, "box-b")
    resume = expect_ok(opened, "API-1.c", "reopen").get("resume_from") or {}
    _timestamp(resume.get("urls_expire_at"), opened, "API-1.c", "resume_from.urls_expire_at")


@pytest.mark.rule("API-1.d")
def test_write_reply_is_shaped_as_the_contract_says(o41_env: Env, o41_api: Client) -> None:
    for place in (o41_env.topology.locations[0], o41_env.topology.other_region(
            o41_env.topology.locations[0].cloud)):
        a = open_box(o41_api, o41_env.artifact("shape-w"), "box-a", place)
        files = make_files({"x": 3, "y/z": 4})
        reply = o41_api.write(a.artifact, a.token, "step-00000001",
                              [f.as_json() for f in file_specs(files)])
        body = expect_ok(reply, "API-1.d", "write")
        check(isinstance(body.get("upload"), str | int) and body["upload"] != "", "API-1.d",
              f"write gave upload {body.get('upload')!r}")
        wl = a.opened.get("write_location") or {}
        loc = body.get("location") or {}
        check_equal((str(loc.get("cloud")).lower(), loc.get("region"), body.get("route")),
                    (str(wl.get("cloud")).lower(), wl.get("region"), wl.get("route")),
                    "API-1.d", f"write location and route of a box at {place}")
        got = body.get("files")
        check(isinstance(got, list) and sorted(f.get("name") for f in got) == sorted(files)
              and all(isinstance(f.get("url"), str) and f["url"] for f in got),
              "API-1.d", f"write files {got!r}")
        when = _timestamp(body.get("expires_at"), reply, "API-1.d", "expires_at")
        check(when > reply.server_time - 1, "API-1.d", "expires_at is in the past")


@pytest.mark.rule("API-1.e")
def test_artifacts_read_is_shaped_as_the_contract_says(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("shape-a")
    a = open_box(o41_api, name, "box-a")
    reply = o41_api.artifact(name)
    body = expect_ok(reply, "API-1.e", "artifacts/read")
    # The contract marks optional keys with "?"; these have none, so a null is sent as null
    for key in ("artifact", "epoch", "holder", "latest", "versions", "forked_from",
                "created_at"):
        check(key in body, "API-1.e", f"artifacts/read of a new artifact: no {key!r} in "
              f"{sorted(body)}")
    check_equal((body.get("artifact"), body.get("epoch"), body.get("holder"), body.get("latest"),
                 body.get("versions"), body.get("forked_from")),
                (name, a.epoch, "box-a", None, 0, None), "API-1.e", "a new artifact")
    _timestamp(body.get("created_at"), reply, "API-1.e", "created_at")
    commit_ok(o41_api, a, "step-00000002", make_files({"m": 2}))
    commit_ok(o41_api, a, "step-00000011", make_files({"m": 3}))
    b = open_box(o41_api, name, "box-b")
    body = expect_ok(o41_api.artifact(name), "API-1.e", "artifacts/read")
    check_equal((body.get("epoch"), body.get("holder"), body.get("latest"), body.get("versions"),
                 body.get("forked_from")),
                (b.epoch, "box-b", "step-00000011", 2, None), "API-1.e", "after two versions")


@pytest.mark.rule("API-1.e")
def test_artifacts_read_counts_the_versions_left_after_a_delete(
    o41_env: Env, o41_api: Client
) -> None:
    """``versions`` is the count of the versions there are: a deleted one (VER-7) no longer
    counts, and ``latest`` stays."""
    name = o41_env.artifact("shape-count")
    a = open_box(o41_api, name, "box-a")
    for step in (1, 2, 3):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 4}, step))
    expect_ok(o41_api.delete(name, a.token, "step-00000002"), "VER-7.a", "delete")
    body = expect_ok(o41_api.artifact(name), "API-1.e", "artifacts/read after the delete")
    check_equal((body.get("versions"), body.get("latest")), (2, "step-00000003"), "API-1.e",
                "versions and latest after deleting step-00000002")


@pytest.mark.rule("FENCE-2.f")
def test_made_up_holder_is_the_holder_everywhere(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("shape-h")
    body = expect_ok(o41_api.open(name), "FENCE-2.f", "open without holder")
    holder = body.get("holder")
    check(isinstance(holder, str) and holder, "FENCE-2.f", f"made-up holder {holder!r}")
    box = Box(holder, name, None, body["token"], body["epoch"], body)
    check_equal(expect_ok(o41_api.artifact(name), "FENCE-2.f", "artifacts/read").get("holder"),
                holder, "FENCE-2.f", "artifacts/read holder")
    version = commit_ok(o41_api, box, "step-00000001", make_files({"m": 1}))
    check_equal(version.get("holder"), holder, "FENCE-2.f", "holder of its version")
    nxt = expect_ok(o41_api.open(name, "latest", None, "box-b"), "FENCE-2.f", "next open")
    check_equal(nxt.get("fenced"), {"epoch": box.epoch, "holder": holder}, "FENCE-2.f",
                "whom the next open fenced")


def _sentence(message: Any, code: str) -> bool:
    """Wording is open; a bare identifier such as the code itself is no sentence."""
    return (isinstance(message, str) and message.strip() != code
            and re.fullmatch(r"[A-Za-z0-9_.:-]*", message.strip()) is None
            or isinstance(message, str) and message.strip()[:1].isupper())


@pytest.mark.rule("API-1.a")
def test_errors_are_json_code_and_sentence(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("shape-e")
    a = open_box(o41_api, name, "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 1}))
    cases = [
        (o41_api.with_key(None).list(name), 401, "unauthenticated"),
        (o41_api.read(name, "step-00000009"), 404, "not_found"),
        (o41_api.read(name, "step-9"), 400, "invalid_argument"),
        (o41_api.open(name, None, None, "box-b"), 409, "has_checkpoints"),
        (o41_api.commit(name, a.token, "no-such-upload"), 404, "not_found"),
    ]
    for reply, status, code in cases:
        what = reply.line()
        expect_error(reply, status, code, "API-1.a", what)
        check("json" in reply.headers.get("Content-Type", ""), "API-1.a",
              f"{what}: Content-Type {reply.headers.get('Content-Type')!r}")
        check(_sentence(reply.body["error"].get("message"), code), "API-1.a",
              f"{what}: message {reply.body['error'].get('message')!r} is no human sentence")


@pytest.mark.rule("API-1.a", "READ-4.b")
def test_a_refused_signed_url_answers_the_contracts_json_error(
    o41_env: Env, o41_api: Client
) -> None:
    """A signed URL that is wrong is in the error table (403 ``forbidden``), so its refusal
    is the contract's JSON error like any other, not an object store's XML or a bare text,
    for a GET URL and for a write's PUT URL alike."""
    a = open_box(o41_api, o41_env.artifact("shape-url-error"), "box-a")
    commit_ok(o41_api, a, "step-00000001", make_files({"m": 64}))
    body = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2.a", "read with urls")
    specs = [f.as_json() for f in file_specs(make_files({"p": 8}))]
    write = expect_ok(o41_api.write(a.artifact, a.token, "step-00000002", specs), "API-1.d",
                      "write")
    cases = [("GET", body["files"][0]["url"], None), ("PUT", write["files"][0]["url"], b"x" * 8)]
    for method, url, data in cases:
        reply = o41_api.fetch(tampered_url(o41_api.absolute(url)), method=method, data=data)
        what = f"{method} of a signed URL with a changed signature"
        check_equal(reply.status, 403, "READ-4.b", what)
        try:
            err = json.loads(reply.content)["error"]
        except (ValueError, KeyError, TypeError):
            err = None
        check(isinstance(err, dict) and err.get("code") == "forbidden", "API-1.a",
              f"{what}: body {reply.content[:200]!r} is not {{\"error\": {{\"code\": "
              "\"forbidden\", ...}}")
        message = err.get("message") if isinstance(err, dict) else None
        check(_sentence(message, "forbidden"), "API-1.a",
              f"{what}: message {message!r} is no human sentence")
        check("json" in reply.headers.get("Content-Type", ""), "API-1.a",
              f"{what}: Content-Type {reply.headers.get('Content-Type')!r}")


@pytest.mark.rule("API-1.g")
def test_open_reply_is_shaped_as_the_contract_says(o41_env: Env, o41_api: Client) -> None:
    topo = o41_env.topology
    for place in (topo.locations[0], topo.other_region(topo.locations[0].cloud)):
        name = o41_env.artifact("shape-o")
        body = expect_ok(o41_api.open(name, "latest", place, "box-a"), "API-1.g", "open")
        # no key of the open's reply is optional: fenced and resume_from are sent as null
        for key in ("artifact", "epoch", "token", "holder", "fenced", "resume_from",
                    "write_location", "warnings"):
            check(key in body, "API-1.g", f"open of a new artifact: no {key!r} in "
                  f"{sorted(body)}")
        check_equal((body.get("artifact"), body.get("holder"), body.get("fenced"),
                     body.get("resume_from")), (name, "box-a", None, None), "API-1.g",
                    f"open of a new artifact from {place}")
        check(_is_int(body.get("epoch")) and isinstance(body.get("token"), str)
              and body["token"], "API-1.g", f"epoch {body.get('epoch')!r}, token")
        wl = body.get("write_location")
        check(isinstance(wl, dict) and {"cloud", "region", "route"} <= set(wl), "API-1.g",
              f"write_location {wl!r} is not {{cloud, region, route}}")
        warnings = body.get("warnings")
        check(isinstance(warnings, list) and all(isinstance(w, str) for w in warnings),
              "API-1.g", f"warnings {warnings!r} is not a list of strings")
