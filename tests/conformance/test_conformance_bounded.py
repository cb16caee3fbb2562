"""The conformance suite's runs are bounded: a target that trickles its answers cannot hold
a request, a test or the probe past its deadline. The trickling target is a socket server
on 127.0.0.1 in this process (tests/support/fake_targets.py)."""

from __future__ import annotations

import re
import socket
import time

import pytest

from conformance import transport
from conformance.target import TargetError, probe
from conformance.transport import RequestDeadline, bounded_request
from tests.support.deadlines import HANG_GUARD
from tests.support.fake_targets import raw_target, run_suite, trickle_404


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_trickling_target_stops_the_run_at_the_probe_deadline_with_one_line() -> None:
    """The issue's target: a 404 with Content-Length 100000, then one byte a second for a
    minute. The probe's 5 s deadline is small beside that and each request's own deadline
    is set far past it: only the probe's deadline can stop the run before the target hangs
    up, and the one line names that deadline and what came by then. (How soon the run
    returns is the machine's: the subprocess' timeout only guards against a hang.)"""
    with raw_target(trickle_404) as url:
        done = run_suite("--target", url, "--api-key", "ak_x", "-q",
                         "--request-deadline", "600", timeout=HANG_GUARD)
    out = done.stdout + done.stderr
    assert done.returncode >= 2, out[-2000:]
    lines = [ln for ln in out.splitlines() if "o41 conformance: target" in ln]
    assert len(lines) == 1, out[-2000:]
    assert "did not answer within the 5 s probe deadline" in lines[0]
    assert "bytes of a 404 body" in lines[0] and "of 100000" in lines[0]
    # The target was held to the deadline, not dropped before it.
    assert float(re.search(r"body in ([0-9.]+) s", lines[0]).group(1)) >= 5.0, lines[0]
    assert "Traceback" not in out


def test_request_deadline_covers_the_whole_body_and_says_what_came() -> None:
    """Every read of the trickle succeeds (a byte a second), so no read timeout trips: a
    deadline of the whole exchange ends it, long before the target hangs up after a minute
    (which would be a ConnectionError, not a RequestDeadline)."""
    with raw_target(trickle_404) as url, pytest.raises(RequestDeadline) as caught:
        bounded_request("GET", url + "/x", deadline=1.5)
    assert "of 100000 bytes of a 404 body" in str(caught.value)
    assert "1.5 s deadline" in str(caught.value)
    assert caught.value.seconds >= 1.5


def _silent(conn: socket.socket, _: bytes) -> None:
    time.sleep(20)  # took the request, never answers: no status line at all


def test_probe_of_a_silent_target_names_what_it_did() -> None:
    with raw_target(_silent) as url, pytest.raises(TargetError) as caught:
        probe(url + "/api/v1", "ak_x", "conf/probe-0")
    assert "sent no complete status line and headers" in str(caught.value)


def test_a_read_timeout_at_the_deadline_is_the_deadline(monkeypatch) -> None:
    """The watchdog thread may run late on a busy machine; the socket's read timeout (the
    same seconds, started later) then ends the exchange first, and is the deadline all the
    same. Here the watchdog never runs at all."""
    monkeypatch.setattr(transport._WATCHDOG, "add", lambda watch: None)
    with raw_target(_silent) as url, pytest.raises(RequestDeadline) as caught:
        bounded_request("GET", url + "/x", deadline=1.0)
    assert "sent no complete status line and headers" in str(caught.value)
    assert "1 s deadline" in str(caught.value)


def test_a_request_that_ends_in_time_reads_the_whole_body() -> None:
    body = b"x" * 300_000

    def answer(conn: socket.socket, _: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    with raw_target(answer) as url:
        resp = bounded_request("GET", url + "/x", deadline=10)
    assert resp.status_code == 200 and resp.content == body


def _probe_then_trickle(conn: socket.socket, first: bytes) -> None:
    if b"probe" in first.split(b"\r\n", 1)[0]:
        data = b'{"error": {"code": "not_found", "message": "none"}}'
        conn.sendall(b"HTTP/1.1 404 X\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(data) + data)
        return
    trickle_404(conn, first)


def test_each_test_ends_by_its_deadline_naming_the_option(tmp_path) -> None:
    """Requests may take 30 s each, but the test may take 2 s: it fails at its own deadline,
    saying so, and not at the request's (the trickle would hold it a minute)."""
    with raw_target(_probe_then_trickle) as url:
        done = run_suite(
            "--target", url, "--api-key", "ak_x", "--rules", "OPEN-1", "-x", "-q",
            "--request-deadline", "30", "--test-deadline", "2", timeout=HANG_GUARD,
        )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "ran past its 2 s deadline (--test-deadline S raises it)" in out
    assert "the request's 30 s deadline ended it" not in out, out[-3000:]
