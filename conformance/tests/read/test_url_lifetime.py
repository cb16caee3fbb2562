"""READ-4.e: a signed URL works until the expiry its reply claims, not only right after it was
handed out; READ-4.c: and not after it, for a GET, a HEAD, a ranged GET or a PUT.

It runs against the expiry target (``--expiry-target``, or with ``--target spawn`` a second
emulator whose URLs live ``--emulator-url-lifetime`` seconds): a URL is sampled shortly
before its claimed end. When the URLs claim to live longer than ``--max-url-wait``, the URL
is sampled after ``--max-url-wait`` seconds instead, which still catches URLs that end long
before the time they claim (and never skips); the tests of expired URLs then skip, naming
the option.

The URLs of the tests of expired URLs are handed out when the module starts
(:func:`handed_out`), so their lifetime passes while the tests shortly before the end run
(these hand out their own URLs and sample them): the module waits about one lifetime, not one
per test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.client import Trail
from conformance.client import parse_time
from conformance.env import Env
from conformance.probes import expect_served
from conformance.rules import check
from conformance.rules import check_equal

#: How long before the claimed end the URL is sampled, on top of the second the reply's
#: ``Date`` header may hide (it has whole seconds): the sample falls 1-2 s before the end.
MARGIN = 1.0
#: How long after the claimed end an expired URL is tried (the ``Date`` header's second).
PAST_END = 1.5


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


def _wait_past_end(reply: Reply, claimed: float) -> None:
    _wait_until(reply.received_at + claimed - reply.server_time + PAST_END)


@dataclass(frozen=True)
class Handed:
    """URLs one reply handed out, and what a test needs of them later."""

    reply: Reply
    body: dict[str, Any]
    #: The reply's ``urls_expire_at`` (a read) or ``expires_at`` (a write), if it has one.
    claimed: float | None
    files: dict[str, bytes]
    #: The requests that handed them out, for the report's steps of the test that uses them.
    steps: tuple[str, ...]
    resume_url: str | None = None

    @property
    def url(self) -> str:
        return str(self.body["files"][0]["url"])


def _one_version(env: Env, api: Client, slug: str, sizes: dict[str, int], seed: int) -> tuple:
    box = open_box(api, env.artifact(slug), "box-a")
    files = make_files(sizes, seed)
    commit_ok(api, box, "step-00000001", files)
    reply = api.read(box.artifact, urls=True)
    body = expect_ok(reply, "READ-2", "read with URLs")
    return box, files, reply, body


def _a_read_and_a_relaunch(env: Env, api: Client) -> Handed:
    box, files, reply, body = _one_version(env, api, "r4e-get", {"m.bin": 1000}, 45)
    relaunch = open_box(api, box.artifact, "box-b", rule="OPEN-2")
    resumed = (relaunch.opened.get("resume_from") or {}).get("files") or [{}]
    return Handed(reply, body, parse_time(body.get("urls_expire_at")), files,
                  tuple(api.trail), resume_url=resumed[0].get("url"))


def _a_write(env: Env, api: Client) -> Handed:
    box = open_box(api, env.artifact("r4e-put"), "box-a")
    files = make_files({"m.bin": 500}, 46)
    specs = [f.as_json() for f in file_specs(files)]
    reply = api.write(box.artifact, box.token, "step-00000001", specs)
    body = expect_ok(reply, "API-1.d", "write")
    return Handed(reply, body, parse_time(body.get("expires_at")), files, tuple(api.trail))


def _a_read_fetched_at_once(env: Env, api: Client) -> Handed:
    _, files, reply, body = _one_version(env, api, "read4e", {"m": 100}, 3)
    check_equal(api.fetch(body["files"][0]["url"]).status, 200, "READ-2", "GET before expiry")
    return Handed(reply, body, parse_time(body.get("urls_expire_at")), files, tuple(api.trail))


def _a_read(env: Env, api: Client) -> Handed:
    _, files, reply, body = _one_version(env, api, "read4c", {"m": 1000}, 11)
    return Handed(reply, body, parse_time(body.get("urls_expire_at")), files, tuple(api.trail))


#: The URLs of each test of expired URLs, handed out when the module starts, and the field
#: of the reply that claims their end.
HAND_OUT: dict[str, tuple[Callable[[Env, Client], Handed], str]] = {
    "test_get_url_refused_after_urls_expire_at": (_a_read, "urls_expire_at"),
    "test_put_url_refused_after_expires_at": (_a_write, "expires_at"),
    "test_url_forbidden_when_expired": (_a_read_fetched_at_once, "urls_expire_at"),
    "test_expired_url_refused_for_head_and_ranged_get": (_a_read, "urls_expire_at"),
}


@pytest.fixture(scope="module", autouse=True)
def handed_out(
    o41_expiring_env: Env, request: pytest.FixtureRequest
) -> dict[str, Handed | Exception]:
    """The URLs of the selected tests of expired URLs, handed out as the module's first test
    starts. A failure to hand them out is kept and raised in the test they are for."""
    here = {getattr(item, "originalname", item.name) for item in request.session.items
            if getattr(item, "module", None) is request.module}
    got: dict[str, Handed | Exception] = {}
    for test, (hand_out, _) in HAND_OUT.items():
        if test not in here:
            continue
        try:
            got[test] = hand_out(o41_expiring_env, o41_expiring_env.client())
        except Exception as exc:  # noqa: BLE001 - raised in the test these URLs are for
            got[test] = exc
    return got


def _take(handed_out: dict[str, Handed | Exception], request: pytest.FixtureRequest,
          env: Env, trail: Trail) -> Handed:
    """This test's URLs from the module's start, their steps added to the test's trail."""
    test = request.node.originalname
    got = handed_out.get(test)
    if got is None:  # selected after the module started (never, in a plain run)
        got = HAND_OUT[test][0](env, env.client(trail=Trail()))
    if isinstance(got, Exception):
        raise got
    for line in got.steps:
        trail.add(line)
    return got


def _expiry_measured(env: Env, handed: Handed, what: str) -> tuple[Reply, float]:
    """Skip, naming the option, when the URLs cannot be waited out: no claimed end, or one
    past ``--max-url-wait``. The reply and its claimed end otherwise."""
    if handed.claimed is None:
        env.note("url_expiry", False, f"the target gives no {what}")
        pytest.skip(f"optional capability: the target gives no {what}")
    lifetime = handed.claimed - handed.reply.server_time
    if lifetime > env.max_url_wait:
        reason = f"optional capability: URLs live {lifetime:.0f}s > --max-url-wait"
        env.note("url_expiry", False, reason)
        pytest.skip(reason)
    env.note("url_expiry", True, f"URLs live {lifetime:.0f}s")
    return handed.reply, handed.claimed


@pytest.fixture
def past_end(
    o41_expiring_env: Env, o41_trail: Trail, handed_out: dict[str, Handed | Exception],
    request: pytest.FixtureRequest,
) -> tuple[Client, Handed]:
    """The test's client and its URLs from the module's start, once the end their reply
    claims has passed (or a skip naming the option that would let the suite wait it out)."""
    env, trail = o41_expiring_env, o41_trail
    handed = _take(handed_out, request, env, trail)
    reply, claimed = _expiry_measured(env, handed, HAND_OUT[request.node.originalname][1])
    _wait_past_end(reply, claimed)
    return env.client(trail=trail), handed


def _sampled(env: Env, api: Client, handed: Handed, clause: str,
             missing: str) -> tuple[float, bool]:
    """:func:`_sample` of the end ``handed``'s reply claims; a reply that claims none breaks
    ``clause`` (``missing`` says so)."""
    check(handed.claimed is not None, clause, missing)
    assert handed.claimed is not None
    return _sample(api, handed.reply, handed.claimed, env.max_url_wait)


# --- shortly before the claimed end: their own URLs (the module's meanwhile pass theirs) ---


@pytest.mark.rule("READ-4.e")
def test_get_url_works_until_shortly_before_urls_expire_at(
    o41_expiring_env: Env, o41_trail: Trail
) -> None:
    env, api = o41_expiring_env, o41_expiring_env.client(trail=o41_trail)
    handed = _a_read_and_a_relaunch(env, api)
    files, url = handed.files, handed.url
    waited, near_end = _sampled(env, api, handed, "API-1.c",
                                "a read with urls=1 carries no urls_expire_at")
    where = "shortly before its urls_expire_at" if near_end else f"{waited:.0f}s into a " \
        f"lifetime that claims {handed.claimed - handed.reply.server_time:.0f}s"
    expect_served(api, url, files["m.bin"], (10, 19), "READ-4.e", f"the URL {where}")
    again = api.fetch(handed.resume_url or url)
    check_equal((again.status, again.content == files["m.bin"]), (200, True), "READ-4.e",
                f"GET of the relaunch's resume_from URL {where}")


@pytest.mark.rule("READ-4.e")
def test_put_url_works_until_shortly_before_expires_at(
    o41_expiring_env: Env, o41_trail: Trail
) -> None:
    env, api = o41_expiring_env, o41_expiring_env.client(trail=o41_trail)
    handed = _a_write(env, api)
    waited, near_end = _sampled(env, api, handed, "API-1.d", "a write carries no expires_at")
    where = "shortly before its expires_at" if near_end else f"{waited:.0f}s after the write"
    put = api.put(handed.url, handed.files["m.bin"])
    check(put.ok, "READ-4.e", f"PUT of the write's URL {where} got {put.status}")


# --- past the claimed end: the URLs handed out when the module started ---


@pytest.mark.rule("READ-4.c")
@pytest.mark.url_expiry
def test_get_url_refused_after_urls_expire_at(past_end: tuple[Client, Handed]) -> None:
    api, handed = past_end
    check_equal(api.fetch(handed.url).status, 403, "READ-4.c", "GET after urls_expire_at")


@pytest.mark.rule("READ-4.c")
@pytest.mark.url_expiry
def test_put_url_refused_after_expires_at(past_end: tuple[Client, Handed]) -> None:
    api, handed = past_end
    check_equal(api.put(handed.url, handed.files["m.bin"]).status, 403, "READ-4.c",
                "PUT after expires_at")


@pytest.mark.rule("READ-4.c")
@pytest.mark.url_expiry
def test_url_forbidden_when_expired(past_end: tuple[Client, Handed]) -> None:
    api, handed = past_end
    url = handed.url
    check_equal(api.fetch(url).status, 403, "READ-4.c", "GET after urls_expire_at")
    check_equal(api.fetch(url, method="HEAD").status, 403, "READ-4.c",
                "HEAD after urls_expire_at")
    check_equal(api.fetch(url, byte_range=(0, 9)).status, 403, "READ-4.c",
                "ranged GET after urls_expire_at")


@pytest.mark.rule("READ-4.c")
@pytest.mark.url_expiry
def test_expired_url_refused_for_head_and_ranged_get(past_end: tuple[Client, Handed]) -> None:
    api, handed = past_end
    check_equal(api.fetch(handed.url, method="HEAD").status, 403, "READ-4",
                "HEAD after expiry")
    check_equal(api.fetch(handed.url, byte_range=(0, 99)).status, 403, "READ-4",
                "ranged GET after it")
