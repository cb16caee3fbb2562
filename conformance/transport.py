"""Every request the suite sends ends by its deadline: connect, headers and the whole body.

``requests``' timeouts bound each socket read, not the exchange: a target that answers a
404 with ``Content-Length: 100000`` and then sends one byte a second never trips a read
timeout and would hold the run for 28 hours. So each exchange is watched: the connection's
socket is registered with one watchdog thread, the body is streamed and counted, and at the
deadline the watchdog shuts the socket down, which ends whatever read is blocked on it. The
exchange then raises :class:`RequestDeadline`, naming what the target did by then ("sent a
404 and 12 of 100000 body bytes in 5.0 s").
"""

from __future__ import annotations

import functools
import heapq
import itertools
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connection import HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.connectionpool import HTTPSConnectionPool
from urllib3.exceptions import DecodeError
from urllib3.exceptions import ProtocolError
from urllib3.exceptions import ReadTimeoutError

__all__ = [
    "DEADLINES", "Deadlines", "RequestDeadline", "Watch", "bounded_request", "watch_for"
]


class Deadlines:
    """The run's limits in seconds, set by the plugin from its options."""

    def __init__(self) -> None:
        #: One request: connect, send, headers and the whole body (``--request-deadline``).
        self.request = 60.0
        #: At most this of it to connect (a target that accepts nothing fails fast).
        self.connect = 10.0
        #: The first contact with the target, before any test (``--probe-deadline``).
        self.probe = 5.0


DEADLINES = Deadlines()


class RequestDeadline(requests.Timeout):
    """The target did not finish one exchange in time. Not a transport failure (it took
    the request and answered slowly or never), so it fails the test like a read timeout."""

    def __init__(self, method: str, url: str, did: str, seconds: float, limit: float) -> None:
        self.method, self.url, self.did, self.seconds = method, url, did, seconds
        super().__init__(
            f"{method} {url}: the target {did} in {seconds:.1f} s, then the request's "
            f"{limit:g} s deadline ended it"
        )


class Watch:
    """One exchange's sockets, shut down when its deadline passes (see :func:`watch_for`)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self.done = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()

    def attach(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)

    def finish(self) -> None:
        with self._lock:
            self.done = True


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing is blocked on it


class _Watchdog:
    """One daemon thread for every watch of the process: a heap of deadlines."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watch]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        with self._cond:
            heapq.heappush(self._heap, (watch.deadline, next(self._seq), watch))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="o41-conformance-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, _, watch = heapq.heappop(self._heap)
            watch.fire()


_WATCHDOG = _Watchdog()
_CURRENT = threading.local()


def watch_for(seconds: float) -> Watch:
    """A watch whose sockets the watchdog shuts down in ``seconds`` unless it is finished
    first (the mutant proxy bounds reading each request with one)."""
    watch = Watch(time.monotonic() + seconds)
    _WATCHDOG.add(watch)
    return watch


def _attach_current(sock: socket.socket | None) -> None:
    watch = getattr(_CURRENT, "watch", None)
    if watch is not None:
        watch.attach(sock)


class _Conn(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _attach_current(self.sock)


class _SConn(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _attach_current(self.sock)


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Conn


class _SPool(HTTPSConnectionPool):
    ConnectionCls = _SConn


class _Adapter(HTTPAdapter):
    """requests' adapter whose connections register their socket with the current watch."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _SPool}


def _what(resp: requests.Response | None, got: int) -> str:
    """What the target did before the deadline, in a few words."""
    if resp is None:
        return "sent no complete status line and headers"
    length = resp.headers.get("Content-Length")
    of = f" of {length}" if length and length.isdigit() else ""
    return f"sent {got}{of} bytes of a {resp.status_code} body"


@functools.cache
def _environment(scheme: str, netloc: str) -> dict[str, Any]:
    """What ``requests`` reads from the environment for a URL of this origin (its proxies,
    honouring ``no_proxy``; a CA bundle), read once per origin: reading it for every request
    cost a quarter of a millisecond of CPU on each of the suite's thousands. No netrc
    credentials: they would replace the Bearer key of every call."""
    with requests.Session() as session:
        found = session.merge_environment_settings(f"{scheme}://{netloc}/", {}, None, None, None)
    return {"proxies": found["proxies"], "verify": found["verify"]}


def bounded_request(
    method: str, url: str, *, deadline: float | None = None, **kwargs: Any
) -> requests.Response:
    """``requests.request`` that ends within ``deadline`` seconds (default: the run's
    ``--request-deadline``), body included, or raises :class:`RequestDeadline`. The reply's
    ``content`` is read whole. No connection outlives the call."""
    limit = DEADLINES.request if deadline is None else deadline
    start = time.monotonic()
    watch = watch_for(limit)
    kwargs["timeout"] = (min(DEADLINES.connect, limit), limit)
    kwargs["stream"] = True
    resp: requests.Response | None = None
    got = 0
    _CURRENT.watch = watch
    try:
        with requests.Session() as session:
            session.trust_env = False  # read once, by _environment
            origin = urlsplit(url)
            for name, value in _environment(origin.scheme, origin.netloc).items():
                kwargs.setdefault(name, value)
            adapter = _Adapter()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            resp = session.request(method, url, **kwargs)
            chunks = []
            while chunk := _read1(resp):
                chunks.append(chunk)
                got += len(chunk)
                if time.monotonic() > watch.deadline:
                    watch.fire()
                    break
            if watch.fired:
                raise _Fired()
            resp._content = b"".join(chunks)
            resp._content_consumed = True
            resp.close()
            return resp
    except Exception as exc:
        # The read timeout equals the deadline and starts later, so when the watchdog thread
        # is slow to run (a busy machine) the read times out first: that is the deadline too.
        if watch.fired or isinstance(exc, _Fired) or time.monotonic() >= watch.deadline:
            if resp is not None:
                resp.close()
            raise RequestDeadline(
                method, url, _what(resp, got), time.monotonic() - start, limit
            ) from (None if isinstance(exc, _Fired) else exc)
        raise
    finally:
        watch.finish()
        _CURRENT.watch = None


def _read1(resp: requests.Response) -> bytes:
    """What one read of the socket gave (counted as it comes, so a deadline can say how
    much arrived), with urllib3's errors turned into requests' as ``iter_content`` does."""
    try:
        return resp.raw.read1(65536, decode_content=True) or b""
    except (ProtocolError, ReadTimeoutError) as exc:
        raise requests.ConnectionError(exc) from exc
    except DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc) from exc


class _Fired(Exception):
    """The deadline passed between two reads (no read was blocked to break)."""
