"""READ-4.e: a signed URL works until the expiry its reply claims, not only right after it was
handed out; READ-4.c: and not after it.

It runs against the expiry target (``--expiry-target``, or with ``--target spawn`` a second
emulator whose URLs live ``--emulator-url-lifetime`` seconds): a URL is sampled shortly
before its claimed end. When the URLs claim to live longer than ``--max-url-wait``, the URL
is sampled after ``--max-url-wait`` seconds instead, which still catches URLs that end long
before the time they claim (and never skips).
"""

from __future__ import annotations

import time

import pytest

from conformance.actions import (
    commit_ok,
    expect_ok,
    file_specs,
    make_files,
    open_box,
)
from conformance.client import Client, Reply, Trail, parse_time
from conformance.env import Env
from conformance.rules import check, check_equal

#: How long before the claimed end the URL is sampled, on top of the second the reply's
#: ``Date`` header may hide (it has whole seconds): the sample falls 1-2 s before the end.
MARGIN = 1.0


def _sure_left(reply: Reply, claimed: float) -> float:
    """Seconds the URL surely had left when the reply arrived, by the server's clock."""
    return claimed - (reply.server_time + 1.0)


def _wait_until(moment: float) -> None:
    while time.time() < moment:  # wait for a moment the server declared, not a guess
        time.sleep(min(0.25, max(0.0, moment - time.time())))


def _sample(api: Client, reply: Reply, claimed: float, wait_cap: float) -> tuple[float, bool]:
    """Sleep until shortly before ``claimed`` (at most ``wait_cap`` seconds after the reply);
    the seconds waited, and whether that was the claimed end's neighbourhood."""
    left = _sure_left(reply, claimed)
    near_end = left - MARGIN <= wait_cap
    waited = max(0.0, min(left - MARGIN, wait_cap))
    _wait_until(reply.received_at + waited)
    return waited, near_end


@pytest.mark.rule("READ-4.e", "READ-4.c")
def test_get_url_works_until_shortly_before_urls_expire_at(
    o41_expiring_env: Env, o41_trail: Trail
) -> None:
    env, api = o41_expiring_env, o41_expiring_env.client(trail=o41_trail)
    a = open_box(api, env.artifact("r4e-get"), "box-a")
    files = make_files({"m.bin": 1000}, 45)
    commit_ok(api, a, "step-00000001", files)
    reply = api.read(a.artifact, urls=True)
    body = expect_ok(reply, "READ-2.a", "read with URLs")
    claimed = parse_time(body.get("urls_expire_at"))
    check(claimed is not None, "API-1.c", "a read with urls=1 carries no urls_expire_at")
    url = body["files"][0]["url"]
    relaunch = open_box(api, a.artifact, "box-b", rule="OPEN-2")
    resumed = (relaunch.opened.get("resume_from") or {}).get("files") or [{}]
    waited, near_end = _sample(api, reply, claimed, env.max_url_wait)
    where = "shortly before its urls_expire_at" if near_end else f"{waited:.0f}s into a " \
        f"lifetime that claims {claimed - reply.server_time:.0f}s"
    got = api.fetch(url)
    check_equal((got.status, got.content == files["m.bin"]), (200, True), "READ-4.e",
                f"GET of the URL {where}")
    again = api.fetch(resumed[0].get("url") or url)
    check_equal((again.status, again.content == files["m.bin"]), (200, True), "READ-4.e",
                f"GET of the relaunch's resume_from URL {where}")
    part = api.fetch(url, byte_range=(10, 19))
    check_equal((part.status, part.content), (206, files["m.bin"][10:20]), "READ-4.e",
                f"ranged GET of the URL {where}")
    if near_end:
        _wait_until(reply.received_at + claimed - reply.server_time + 1.5)
        check_equal(api.fetch(url).status, 403, "READ-4.c", "GET after urls_expire_at")


@pytest.mark.rule("READ-4.e", "READ-4.c")
def test_put_url_works_until_shortly_before_expires_at(
    o41_expiring_env: Env, o41_trail: Trail
) -> None:
    env, api = o41_expiring_env, o41_expiring_env.client(trail=o41_trail)
    a = open_box(api, env.artifact("r4e-put"), "box-a")
    files = make_files({"m.bin": 500}, 46)
    specs = [f.as_json() for f in file_specs(files)]
    reply = api.write(a.artifact, a.token, "step-00000001", specs)
    body = expect_ok(reply, "API-1.d", "write")
    claimed = parse_time(body.get("expires_at"))
    check(claimed is not None, "API-1.d", "a write carries no expires_at")
    waited, near_end = _sample(api, reply, claimed, env.max_url_wait)
    where = "shortly before its expires_at" if near_end else f"{waited:.0f}s after the write"
    url = body["files"][0]["url"]
    put = api.put(url, files["m.bin"])
    check(put.ok, "READ-4.e", f"PUT of the write's URL {where} got {put.status}")
    if near_end:
        _wait_until(reply.received_at + claimed - reply.server_time + 1.5)
        check_equal(api.put(url, files["m.bin"]).status, 403, "READ-4.c", "PUT after expires_at")
