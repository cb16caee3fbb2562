"""The mutant proxy reads each request with limits and a deadline: a bad or over-limit
length is refused at once, a body that never ends or trickles is cut off by the deadline,
and no proxy thread is left holding the connection.

The proxy runs in this process with a 1 s request deadline in front of an upstream that
answers every request itself, so only the proxy's reading is under test."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from conformance.mutants.base import Mutant, Request, Response
from conformance.mutants.proxy import HttpUpstream, MutantProxy


class _Answers(Mutant):
    """Stands in for upstream: 200 with the length of the body it was handed."""

    def handle(self, request: Request, upstream: object) -> Response:
        return Response(200, (("Content-Type", "text/plain"),), str(len(request.body)).encode())


@pytest.fixture
def proxy() -> Iterator[MutantProxy]:
    server = MutantProxy(HttpUpstream("http://127.0.0.1:9"), _Answers(), max_body=1 << 20,
                         request_deadline=1.0, read_timeout=5.0)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _handler_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request" in t.name)


def _exchange(proxy: MutantProxy, head: bytes, then: list[bytes] = (),  # type: ignore[assignment]
              gap: float = 0.0) -> tuple[bytes, float]:
    """Send ``head`` and the pieces of ``then`` (``gap`` s apart); what came back until the
    proxy closed, and when."""
    host, port = proxy.server_address[:2]
    started = time.monotonic()
    with socket.create_connection((host, port), timeout=15) as conn:
        conn.sendall(head)
        for piece in then:
            time.sleep(gap)  # the trickle itself, not a timing assertion
            try:
                conn.sendall(piece)
            except OSError:
                break
        got = b""
        while chunk := conn.recv(65536):
            got += chunk
    return got, time.monotonic() - started


def _wait_threads_gone(before: int) -> int:
    deadline = time.monotonic() + 5
    while _handler_threads() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    return _handler_threads()


POST = b"POST /api/v1/versions/commit HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize("length, status", [(b"-1", b"400"), (b"12abc", b"400"),
                                            (b"99999999999", b"413")])
def test_bad_or_over_limit_length_is_refused_at_once(
    proxy: MutantProxy, length: bytes, status: bytes
) -> None:
    before = _handler_threads()
    got, took = _exchange(proxy, POST + b"Content-Length: " + length + b"\r\n\r\n")
    assert got.split(b"\r\n", 1)[0].split(b" ")[1] == status, got[:200]
    assert b"proxy_refused" in got and took < 1.0
    assert _wait_threads_gone(before) == before


def test_chunked_body_that_never_ends_is_cut_off_by_the_deadline(proxy: MutantProxy) -> None:
    before = _handler_threads()
    head = POST + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
    got, took = _exchange(proxy, head)  # ... and then nothing more, the socket left open
    assert got == b"" and took < 4
    assert _wait_threads_gone(before) == before


def test_over_limit_chunked_body_is_refused(proxy: MutantProxy) -> None:
    head = POST + b"Transfer-Encoding: chunked\r\n\r\n" + b"200000\r\n"  # 2 MiB > 1 MiB
    got, _ = _exchange(proxy, head)
    assert got.startswith(b"HTTP/1.1 413"), got[:200]


def test_malformed_chunk_size_is_refused(proxy: MutantProxy) -> None:
    got, _ = _exchange(proxy, POST + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n")
    assert got.startswith(b"HTTP/1.1 400"), got[:200]


def test_trickling_body_is_cut_off_by_the_deadline(proxy: MutantProxy) -> None:
    before = _handler_threads()
    got, took = _exchange(proxy, POST + b"Content-Length: 100\r\n\r\n", [b"x"] * 40, gap=0.1)
    assert got == b"" and took < 6
    assert _wait_threads_gone(before) == before


def test_trickling_headers_are_cut_off_by_the_deadline(proxy: MutantProxy) -> None:
    got, took = _exchange(proxy, b"POST /api", [b"/v1/x HTTP/1.1\r\n"] + [b"X: y\r\n"] * 40,
                          gap=0.1)
    assert got == b"" and took < 6


def test_a_well_formed_body_still_passes(proxy: MutantProxy) -> None:
    chunked, _ = _exchange(proxy, POST + b"Transfer-Encoding: chunked\r\nConnection: close"
                           b"\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 200") and chunked.endswith(b"\r\n\r\n8")
    plain, _ = _exchange(proxy, POST + b"Content-Length: 4\r\nConnection: close\r\n\r\nabcd")
    assert plain.startswith(b"HTTP/1.1 200") and plain.endswith(b"4")
