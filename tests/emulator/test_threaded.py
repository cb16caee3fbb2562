"""`ThreadedEmulator`: the whole emulator served from a thread of the test process."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from emulator import ThreadedEmulator
from emulator.settings.config import KeySpec
from tests.support.emulator_http import AWS, Box, Http


def test_serves_api_and_data_plane_on_a_free_loopback_port():
    with ThreadedEmulator() as emu:
        assert emu.url.startswith("http://127.0.0.1:") and emu.api_url == emu.url + "/api/v1"
        http = Http(emu.url)
        box = Box(http, "team/run-1", AWS, key=emu.key)
        assert box.open().status == 200
        data = bytes(range(256)) * 100
        assert box.checkpoint("step-00000001", {"m": data}).status == 200
        url = box.read(place="aws/us-east-1").body["files"][0]["url"]
        ranged = requests.get(url, headers={"Range": "bytes=10-19"}, timeout=60)
        assert (ranged.status_code, ranged.content) == (206, data[10:20])


def test_settings_are_keyword_arguments_and_a_wrong_one_is_refused():
    with ThreadedEmulator(faults=["no-fencing"], url_lifetime=60) as emu:
        health = requests.get(f"{emu.url}/_emulator/health", timeout=60).json()
        assert health["faults"] == ["no-fencing"] and emu.settings.url_lifetime == 60
    with pytest.raises(ValueError, match="unknown setting"):
        ThreadedEmulator(url_lifetme=60).start()


def test_its_key_writes_everything_even_when_the_settings_name_only_a_reader():
    reader = KeySpec("ak_reader", (("", "read"),))
    with ThreadedEmulator(keys=(reader,)) as emu:
        assert emu.key not in ("", "ak_reader", "ak_local")
        http = Http(emu.url)
        assert Box(http, "any/where", AWS, key=emu.key).open().status == 200
        denied = Box(http, "any/where", AWS, key="ak_reader").open()
        assert (denied.status, denied.code) == (403, "forbidden")


def test_reset_by_call_and_by_request_forgets_every_artifact_and_its_bytes():
    with ThreadedEmulator() as emu:
        http = Http(emu.url)
        buckets = emu.settings.data_dir / "buckets"
        for reset in (emu.reset, lambda: requests.post(f"{emu.url}/_emulator/reset",
                                                       timeout=60).raise_for_status()):
            box = Box(http, "team/run-1", AWS, key=emu.key)
            assert box.open().status == 200
            assert box.checkpoint("step-00000001", {"m": b"weights"}).status == 200
            assert any(p.is_file() for p in buckets.glob("o41-aws-*/**/*"))
            reset()
            assert not any(p.is_file() for p in buckets.glob("o41-aws-*/**/*"))
            listed = http.request("GET", "/api/v1/versions/list",
                                  params={"artifact": "team/run-1"}, key=emu.key)
            assert (listed.status, listed.code) == (404, "not_found")
            assert box.open().body["epoch"] == 1  # the same name, new again


def test_stop_closes_the_port_and_idle_connections_and_removes_its_data():
    emu = ThreadedEmulator().start()
    data_dir = emu.settings.data_dir
    kept = requests.Session()  # a keep-alive connection left idle in the server
    assert kept.get(f"{emu.url}/_emulator/health", timeout=60).status_code == 200
    emu.stop()
    emu.stop()  # a second stop is no error
    assert not emu.running and not data_dir.exists()
    with pytest.raises(requests.ConnectionError):
        kept.get(f"{emu.url}/_emulator/health", timeout=60)
    kept.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("o41-emulator http")]


def test_a_data_dir_given_is_kept():
    with ThreadedEmulator() as first:
        data_dir = first.settings.data_dir
    assert not data_dir.exists()
    data_dir.mkdir()
    with ThreadedEmulator(data_dir=data_dir) as emu:
        assert Box(Http(emu.url), "team/run-1", AWS, key=emu.key).open().status == 200
    assert (data_dir / "metadata.sqlite3").exists()


def test_a_start_empties_the_trash_a_stop_cut_short(tmp_path):
    """A reset's buckets, moved aside and not yet removed when the process ended."""
    left = tmp_path / "data" / "buckets" / ".trash" / "o41-aws-us-east-1.0123456789ab"
    (left / "team" / "run-1" / "up_x" / "f").mkdir(parents=True)
    (left / "team" / "run-1" / "up_x" / "f" / "model.bin").write_bytes(b"old bytes")
    with ThreadedEmulator(data_dir=tmp_path / "data"):
        deadline = time.monotonic() + 120
        while left.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left.exists()
