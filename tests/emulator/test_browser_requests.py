"""Requests a browser did not mean to send are refused and change nothing (issue 20).

A page on any site can make the browser POST a form, or `fetch` a Blob with no
Content-Type, to 127.0.0.1; a page on a DNS-rebinding domain can even call /api/v1 as a
same-origin request with the well-known dev key. Each is refused with the contract's error
body, and the state afterwards is what it was before.
"""

from __future__ import annotations

import pytest
import requests

from emulator import create_app
from emulator.rules.origins import Guard, host_name, is_loopback
from tests.support.backends import make_settings
from tests.support.emulator_http import AWS, KEY, Box, Http

EVIL = "http://evil.example"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def http(tmp_path, request) -> Http:
    return Http("http://localhost", create_app(make_settings(tmp_path, request)).test_client())


@pytest.fixture
def saved(http, artifact) -> Box:
    """An artifact with one committed checkpoint, to show that nothing was wiped."""
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    assert box.checkpoint("step-00000001").status == 200
    return box


def state(http) -> dict:
    r = http.request("GET", "/_emulator/state", key=None)
    assert r.status == 200
    return r.body


def chaos_rules(http) -> list:
    return http.request("GET", "/_emulator/chaos", key=None).body["rules"]


def raw(http, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    """A request exactly as a browser would send it: these headers, this body, no key."""
    r = http.flask.open(path, method=method, data=body, headers=headers or {})
    return r.status_code, (r.get_json(silent=True) or {}).get("error", {})


@pytest.mark.parametrize("headers", [
    {"Origin": EVIL, **FORM},                                   # the probe's curl
    {"Origin": EVIL, "Sec-Fetch-Site": "cross-site", **FORM},  # what Chromium sends
    {"Sec-Fetch-Site": "cross-site", **FORM},                  # no Origin, still marked
    {"Origin": "null", **FORM},                                # a sandboxed or file:// page
    {"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site", **FORM},
])
def test_a_cross_site_form_post_to_reset_is_refused_and_wipes_nothing(http, saved, headers):
    before = state(http)
    status, error = raw(http, "POST", "/_emulator/reset", b"x=1", headers)
    assert (status, error.get("code")) == (403, "forbidden")
    assert "allowed_origins" in error["message"]
    assert state(http) == before
    assert saved.read().status == 200


def test_cross_site_posts_cannot_mint_keys_or_set_chaos_rules(http, saved):
    minted = b'{"key": "ak_minted_by_a_page"}'
    status, error = raw(http, "POST", "/_emulator/keys", minted, {"Origin": EVIL, **FORM})
    assert (status, error.get("code")) == (403, "forbidden")
    rules = b'{"rules": [{"operation": "*", "status": 503}]}'
    status, error = raw(http, "POST", "/_emulator/chaos", rules,
                        {"Origin": EVIL, "Content-Type": "text/plain"})
    assert (status, error.get("code")) == (403, "forbidden")
    status, error = raw(http, "DELETE", "/_emulator/chaos", b"", {"Origin": EVIL})
    assert (status, error.get("code")) == (403, "forbidden")
    assert Box(http, saved.artifact, AWS, key="ak_minted_by_a_page").open().code == (
        "unauthenticated")
    assert chaos_rules(http) == []


def test_a_cross_site_write_to_the_api_is_refused_even_with_the_dev_key(http, saved):
    before = state(http)
    r = http.request("POST", "/api/v1/artifacts/open", headers={"Origin": EVIL},
                     json={"artifact": saved.artifact, "resume": None})
    assert (r.status, r.code) == (403, "forbidden")
    assert state(http) == before


def test_a_body_without_content_type_is_refused_on_every_json_endpoint(http, saved):
    """What `fetch(url, {method: "POST", body: blob})` sends: no Content-Type at all."""
    before = state(http)
    status, error = raw(http, "POST", "/_emulator/keys", b'{"key": "ak_from_a_blob"}')
    assert (status, error.get("code")) == (400, "invalid_argument")
    assert "Content-Type must be application/json" in error["message"]
    status, error = raw(http, "POST", "/_emulator/chaos",
                        b'{"rules": [{"operation": "*", "status": 503}]}')
    assert (status, error.get("code")) == (400, "invalid_argument")
    r = http.flask.open("/api/v1/artifacts/open", method="POST",
                        data=f'{{"artifact": "{saved.artifact}", "resume": "latest"}}',
                        headers={"Authorization": f"Bearer {KEY}"})
    assert (r.status_code, r.get_json()["error"]["code"]) == (400, "invalid_argument")
    assert Box(http, saved.artifact, AWS, key="ak_from_a_blob").open().code == "unauthenticated"
    assert chaos_rules(http) == []
    assert state(http) == before


@pytest.mark.parametrize("path, method", [
    ("/api/v1/versions/list", "GET"),
    ("/api/v1/artifacts/open", "POST"),
    ("/_emulator/reset", "POST"),
    ("/_emulator/state", "GET"),
    ("/", "GET"),
])
def test_a_foreign_host_is_refused_naming_the_setting_that_admits_it(http, saved, path,
                                                                      method):
    """DNS rebinding: the page's own origin, so no Origin check can tell; the Host can."""
    before = state(http)
    headers = {"Host": "evil.example:8041", "Authorization": f"Bearer {KEY}",
               "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}
    body = f'{{"artifact": "{saved.artifact}", "resume": null}}' if method == "POST" else None
    r = http.flask.open(path, method=method, headers=headers, data=body,
                        query_string={"artifact": saved.artifact} if method == "GET" else None)
    error = r.get_json()["error"]
    assert (r.status_code, error["code"]) == (403, "forbidden")
    assert "'evil.example'" in error["message"]
    assert "allowed_hosts (--allowed-hosts, O41_EMULATOR_SERVE_ALLOWED_HOSTS" in error["message"]
    assert state(http) == before


def test_the_emulators_own_pages_and_clients_that_are_no_browser_still_change_state(
        http, saved):
    ok = [
        raw(http, "POST", "/_emulator/chaos", b'{"rules": []}',
            {"Origin": "http://localhost", "Content-Type": "application/json"}),
        raw(http, "POST", "/_emulator/chaos", b'{"rules": []}',
            {"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}),
        raw(http, "DELETE", "/_emulator/chaos"),  # curl -X DELETE: no browser marks
    ]
    assert [status for status, _ in ok] == [200, 200, 200]
    status, _ = raw(http, "POST", "/_emulator/reset", b"x=1",
                    {"Origin": "http://localhost", **FORM})  # a form of its own pages
    assert status == 200
    assert saved.read().code == "not_found"


def test_admitted_hosts_and_origins_are_served(tmp_path, request, artifact):
    settings = make_settings(tmp_path, request)
    from dataclasses import replace

    app = create_app(replace(settings, allowed_hosts=("emulator", ".svc.internal"),
                             allowed_origins=("http://localhost:3000",),
                             public_url="http://proxy.example:9000"))
    client = app.test_client()
    for host in ("emulator:8041", "a.svc.internal", "proxy.example:9000", "127.0.0.9",
                 "[::1]:8041", "app.localhost"):
        assert client.get("/_emulator/health", headers={"Host": host}).status_code == 200, host
    r = client.post("/_emulator/chaos", json={"rules": []},
                    headers={"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"})
    assert r.status_code == 200
    assert client.get("/_emulator/health", headers={"Host": "svc.internal.evil"}).status_code \
        == 403


def test_host_names_are_read_as_browsers_send_them():
    assert [host_name(h) for h in ("LOCALHOST:8041", "[::1]:80", "::1", "a.b.", "x")] == [
        "localhost", "::1", "::1", "a.b", "x"]
    assert all(map(is_loopback, ("localhost", "a.localhost", "127.0.0.1", "127.9.9.9", "::1")))
    assert not any(map(is_loopback, ("localhost.evil.example", "10.0.0.1", "0.0.0.0")))
    guard = Guard(["*"])
    assert guard.host_admitted("anything.example")


def test_a_served_emulator_refuses_the_probes_requests_and_keeps_its_artifacts(live_factory,
                                                                               artifact):
    emu = live_factory()
    box = Box(emu.http, artifact, AWS)
    box.open()
    assert box.checkpoint("step-00000001").status == 200
    url = emu.url
    wiped = requests.post(f"{url}/_emulator/reset", data={"x": "1"},
                          headers={"Origin": EVIL}, timeout=30)
    assert (wiped.status_code, wiped.json()["error"]["code"]) == (403, "forbidden")
    minted = requests.post(f"{url}/_emulator/keys", data=b'{"key": "ak_blob"}', timeout=30)
    assert (minted.status_code, minted.json()["error"]["code"]) == (400, "invalid_argument")
    rebound = requests.get(f"{url}/api/v1/versions/list", params={"artifact": artifact},
                           headers={"Host": "evil.example", "Authorization": f"Bearer {KEY}"},
                           timeout=30)
    assert (rebound.status_code, rebound.json()["error"]["code"]) == (403, "forbidden")
    assert box.read().status == 200
    assert Box(emu.http, artifact, AWS, key="ak_blob").open().code == "unauthenticated"
    # Signed URLs carry the Host the API was called under, so they work with no Origin.
    got = requests.get(box.read().body["files"][0]["url"], timeout=30)
    assert got.status_code == 200
