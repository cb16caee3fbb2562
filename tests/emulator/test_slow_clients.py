"""Slow and stalled clients cannot freeze a served emulator, nor leave half a file behind."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import requests

from tests.support.emulator_http import AWS, Box, sha
from tests.support.race_tools import RawPut

SLOW_CLIENTS = 32


def test_health_answers_while_32_slow_uploads_hold_connections(live_factory, artifact):
    # The default 2 workers, as a user starts it; a read timeout far above the health
    # calls' own, so a starved call fails rather than waiting for the stalled ones to drop.
    emu = live_factory("--read-timeout", "900")
    box = Box(emu.http, artifact, AWS)
    box.open()
    files = {f"f{i}": b"x" * 1_000_000 for i in range(SLOW_CLIENTS)}
    w = box.write("step-00000001", files)
    slow = []
    try:
        for f in w.body["files"]:  # headers and a few body bytes, then nothing
            put = RawPut(f["url"], 1_000_000)
            put.send(b"x" * 10)
            slow.append(put)
        time.sleep(0.5)  # let every worker pick its slow connections up
        for _ in range(5):
            r = requests.get(emu.url + "/_emulator/health", timeout=120)
            assert r.status_code == 200
    finally:
        for put in slow:
            put.hang_up()


def test_stalled_upload_is_dropped_after_the_read_timeout_and_keeps_nothing(
        live_factory, artifact):
    emu = live_factory("--read-timeout", "1")
    box = Box(emu.http, artifact, AWS)
    box.open()
    data = b"y" * 100_000
    w = box.write("step-00000001", {"m": data})
    put = RawPut(w.body["files"][0]["url"], len(data))
    put.send(data[:50_000])
    status, body = put.reply()  # the server gives up on its own; the test only waits
    assert (status, body["error"]["code"]) == (400, "invalid_argument")
    c = box.commit(w.body["upload"])
    assert (c.status, c.code) == (409, "incomplete")
    box.upload(w, {"m": data})  # the upload itself is still usable
    c = box.commit(w.body["upload"])
    assert c.status == 200 and c.body["files"][0]["sha256"] == sha(data)


def test_half_sent_headers_are_dropped_after_the_read_timeout(live_factory):
    emu = live_factory("--read-timeout", "1")
    parts = urlsplit(emu.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(b"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert sock.recv(65536) == b""  # closed by the server, not by the test's timeout
