"""The mutant proxy reads each request with limits and a deadline: a bad or over-limit
length is refused before any body is read, a body that never ends or trickles is cut off by
the deadline, and no proxy thread is left holding the connection.

The proxy runs in this process in front of an upstream that answers every request itself,
so only the proxy's reading is under test. No test times the proxy: each one sets the limit
it is about small and every other limit huge, so that only the behaviour under test can
end the exchange before the client's hang guard (a socket timeout of minutes) does."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from conformance.mutants.base import Mutant, Request, Response
from conformance.mutants.proxy import HttpUpstream, MutantProxy

#: Longer than any test here takes: a limit this long never ends an exchange in a test.
HUGE = 600.0
#: The client's socket timeout: only a proxy that holds the connection forever trips it.
HANG_GUARD = 120.0


class _Answers(Mutant):
    """Stands in for upstream: 200 with the length of the body it was handed."""

    def handle(self, request: Request, upstream: object) -> Response:
        return Response(200, (("Content-Type", "text/plain"),), str(len(request.body)).encode())


MakeProxy = Callable[..., MutantProxy]


@pytest.fixture
def make_proxy() -> Iterator[MakeProxy]:
    """``make_proxy(request_deadline=..., read_timeout=...)``: a started proxy, stopped at
    the end of the test; every limit not given is :data:`HUGE`."""
    started: list[MutantProxy] = []

    def make(request_deadline: float = HUGE, read_timeout: float = HUGE) -> MutantProxy:
        server = MutantProxy(HttpUpstream("http://127.0.0.1:9"), _Answers(), max_body=1 << 20,
                             request_deadline=request_deadline, read_timeout=read_timeout)
        server.start()
        started.append(server)
        return server

    try:
        yield make
    finally:
        for server in started:
            server.stop()


def _handler_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request" in t.name)


@dataclass
class _Seen:
    """What the client saw: the bytes the proxy sent back before it closed the connection,
    and how many of the pieces the client meant to send went out before that."""

    got: bytes
    sent: int


def _exchange(proxy: MutantProxy, head: bytes, then: list[bytes] = (),  # type: ignore[assignment]
              gap: float = 0.0) -> _Seen:
    """Send ``head`` and the pieces of ``then`` (``gap`` s apart), stopping at the first
    piece the closed connection refuses; then read until the proxy closes."""
    host, port = proxy.server_address[:2]
    sent = 0
    with socket.create_connection((host, port), timeout=HANG_GUARD) as conn:
        conn.sendall(head)
        for piece in then:
            time.sleep(gap)  # the trickle itself, not a timing assertion
            try:
                conn.sendall(piece)
            except OSError:
                break
            sent += 1
        got = b""
        try:
            while chunk := conn.recv(65536):
                got += chunk
        except ConnectionResetError:
            pass  # the proxy closed with our trickle unread: closed all the same
    return _Seen(got, sent)


def _wait_threads_gone(before: int) -> int:
    deadline = time.monotonic() + 60  # a hang guard: the threads end as the connection does
    while _handler_threads() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    return _handler_threads()


POST = b"POST /api/v1/versions/commit HTTP/1.1\r\nHost: x\r\n"
#: A trickle of a minute, a piece every 0.1 s: sixty times the 1 s deadline it must outlast.
TRICKLE, GAP = 600, 0.1


@pytest.mark.parametrize("length, status", [(b"-1", b"400"), (b"12abc", b"400"),
                                            (b"99999999999", b"413")])
def test_bad_or_over_limit_length_is_refused_before_any_body_is_read(
    make_proxy: MakeProxy, length: bytes, status: bytes
) -> None:
    """No body is ever sent and neither the deadline nor a read timeout could end the wait
    for one: a refusal comes back only if the proxy refused on the header alone."""
    proxy = make_proxy()
    before = _handler_threads()
    seen = _exchange(proxy, POST + b"Content-Length: " + length + b"\r\n\r\n")
    assert seen.got.split(b"\r\n", 1)[0].split(b" ")[1] == status, seen.got[:200]
    assert b"proxy_refused" in seen.got
    assert _wait_threads_gone(before) == before


def test_chunked_body_that_never_ends_is_cut_off_by_the_deadline(make_proxy: MakeProxy) -> None:
    """A read timeout that never trips: only the request's deadline closes the connection,
    with no reply."""
    proxy = make_proxy(request_deadline=1.0)
    before = _handler_threads()
    head = POST + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
    seen = _exchange(proxy, head)  # ... and then nothing more, the socket left open
    assert seen.got == b""
    assert _wait_threads_gone(before) == before


def test_over_limit_chunked_body_is_refused(make_proxy: MakeProxy) -> None:
    head = POST + b"Transfer-Encoding: chunked\r\n\r\n" + b"200000\r\n"  # 2 MiB > 1 MiB
    seen = _exchange(make_proxy(), head)
    assert seen.got.startswith(b"HTTP/1.1 413"), seen.got[:200]


def test_malformed_chunk_size_is_refused(make_proxy: MakeProxy) -> None:
    seen = _exchange(make_proxy(), POST + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n")
    assert seen.got.startswith(b"HTTP/1.1 400"), seen.got[:200]


def test_trickling_body_is_cut_off_by_the_deadline_while_it_trickles(
    make_proxy: MakeProxy
) -> None:
    """Every read gets a byte, so only a deadline on the whole request stops it: the proxy
    closes the connection, with no reply, while the client still has bytes to send (a
    deadline that counted from the last byte would let all of them through)."""
    proxy = make_proxy(request_deadline=1.0)
    before = _handler_threads()
    seen = _exchange(proxy, POST + b"Content-Length: 100000\r\n\r\n", [b"x"] * TRICKLE,
                     gap=GAP)
    assert seen.got == b"" and seen.sent < TRICKLE, seen
    assert _wait_threads_gone(before) == before


def test_trickling_headers_are_cut_off_by_the_deadline_while_they_trickle(
    make_proxy: MakeProxy
) -> None:
    """One header line that never ends, a byte at a time: cut off while it trickles."""
    proxy = make_proxy(request_deadline=1.0)
    seen = _exchange(proxy, b"POST /api/v1/x HTTP/1.1\r\nX: ", [b"y"] * TRICKLE, gap=GAP)
    assert seen.got == b"" and seen.sent < TRICKLE, seen


def test_a_well_formed_body_still_passes(make_proxy: MakeProxy) -> None:
    proxy = make_proxy()
    chunked = _exchange(proxy, POST + b"Transfer-Encoding: chunked\r\nConnection: close"
                        b"\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n").got
    assert chunked.startswith(b"HTTP/1.1 200") and chunked.endswith(b"\r\n\r\n8")
    plain = _exchange(proxy, POST + b"Content-Length: 4\r\nConnection: close\r\n\r\nabcd").got
    assert plain.startswith(b"HTTP/1.1 200") and plain.endswith(b"4")
