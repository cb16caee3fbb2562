"""Serving the app with gunicorn (threads in each of several worker processes).

The CLI binds the socket itself so that `--port 0` can report the port it got before any
worker starts; gunicorn then serves on that file descriptor.

PUT bodies of known length skip gunicorn's body reader (which copies every byte through
two BytesIO buffers, costing more CPU than hashing it): `SocketBody` hands out what gunicorn
already buffered, then receives straight into the caller's buffer, and keeps gunicorn's
count of unread body bytes in step so that keep-alive still finds the next request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import io
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterable

from gunicorn.app.base import BaseApplication
from gunicorn.http.body import Body, ChunkedReader, LengthReader
from gunicorn.http.errors import NoMoreData, ParseException
from gunicorn.workers.gthread import ThreadWorker

from ..core.errors import InvalidArgument
from ..settings.config import Settings
from .chunked import ChunkedSocketBody

_CUT = "the request body was cut or malformed; nothing of it was kept"

LOG_FORMAT = "%(asctime)s %(message)s"
M_ARENA_MAX = -8  # glibc's mallopt() parameter
MALLOC_ARENAS = 2


def fewer_malloc_arenas() -> bool:
    """Cap glibc's malloc arenas before any worker thread starts (workers inherit it).

    glibc gives threads their own arenas, up to 8 per core, and each keeps what its threads
    freed: with 64 threads per worker the server's RSS rose from 67 MB to about 220 MB
    under a mixed load and crept on for minutes; with 2 arenas the same soak stays near
    130 MB (docs/reliability.md, "Memory"). Python allocates under the GIL, so threads
    hardly contend for them. A MALLOC_ARENA_MAX the user set is left alone."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, MALLOC_ARENAS))
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to cap
        return False


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


class TimedSocket(socket.socket):
    """A client socket whose blocking reads and writes give up after `read_timeout` s.

    gunicorn switches client sockets between blocking (a thread serves a request) and
    non-blocking (the poller waits for the next one) with setblocking(); here "blocking"
    means "blocking for at most read_timeout", so a client that stops sending headers or
    body bytes (or stops reading a response) frees its thread instead of holding it.
    """

    read_timeout: float = 30.0

    @classmethod
    def adopt(cls, sock: socket.socket, read_timeout: float) -> TimedSocket:
        timed = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        timed.read_timeout = read_timeout
        timed.settimeout(read_timeout)
        return timed

    def setblocking(self, flag: bool) -> None:
        self.settimeout(self.read_timeout if flag else 0.0)


class EmulatorWorker(ThreadWorker):
    """gunicorn's threaded worker, with every client socket a `TimedSocket`."""

    read_timeout: float = 30.0

    def enqueue_req(self, conn) -> None:
        if not isinstance(conn.sock, TimedSocket):  # a new connection, not yet served
            conn.sock = TimedSocket.adopt(conn.sock, self.read_timeout)
        super().enqueue_req(conn)


class EmulatorServer(BaseApplication):
    """A gunicorn application whose workers each build their own app on the same data."""

    def __init__(
        self,
        settings: Settings,
        sock: socket.socket,
        workers: int,
        threads: int,
        quiet: bool = False,
    ) -> None:
        self.settings = settings
        self.options = {
            "bind": [f"fd://{sock.fileno()}"],
            "workers": workers,
            "threads": threads,
            # A class made per server: workers are forked, and read the timeout from it.
            "worker_class": type(
                "EmulatorWorker", (EmulatorWorker,), {"read_timeout": settings.read_timeout}
            ),
            "timeout": 0,  # long uploads are not a hung worker
            "graceful_timeout": 5,
            "keepalive": 30,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "proc_name": "o41-emulator",
            "pre_fork": freeze_before_fork,
        }
        self.quiet = quiet
        fewer_malloc_arenas()  # here, in the master: before gunicorn forks and threads start
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)
        # gunicorn >= 25.1 opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl)
        # by default: every emulator the user runs (a test suite starts dozens, some at once)
        # would take it from the one before, and any process of the user could resize or
        # reload this one through it. The emulator is managed by its own admin endpoints.
        if "control_socket_disable" in self.cfg.settings:
            self.cfg.set("control_socket_disable", True)

    def load(self):
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.WARNING if self.quiet else logging.INFO,
            format=LOG_FORMAT,
        )
        # Imported here, in the worker, not by the master: the master only prepares storage
        # and supervises, and every page it holds counts again in each worker it forks
        # (Flask, werkzeug, jinja2 and the views: about 6 MB; docs/reliability.md, "Memory").
        from ..rules.upkeep import keep_up
        from ..web.app import create_app

        flask_app = create_app(self.settings, prepare=False)
        # Heartbeat and reclaim on their own clock, not only when requests come.
        threading.Thread(target=keep_up, args=(flask_app.extensions["o41"], threading.Event()),
                         name="o41-upkeep", daemon=True).start()
        app = socket_bodies(flask_app)
        # Everything loaded so far lives as long as the worker: keep it out of the garbage
        # collector's full passes, which a request building a big report (usage/read over
        # tens of thousands of rows) can trigger.
        gc.freeze()
        return app


def freeze_before_fork(server, worker) -> None:
    """gunicorn's `pre_fork` hook: move the master's objects out of the collector's reach.

    A worker's full collection (importing the app allocates enough to run one) would
    otherwise write to the header of every object it inherited, copying each page that
    holds one, and share far fewer pages with the master: peak PSS while streaming was
    100 MB without this, 88 MB with it."""
    gc.freeze()


class SocketBody:
    """`wsgi.input` of one PUT with a Content-Length, read from the client socket itself."""

    def __init__(self, body: Body, sock: socket.socket) -> None:
        self.body, self.sock = body, sock
        self.reader: LengthReader = body.reader
        unreader = self.reader.unreader
        ahead = unreader.buf.getvalue()  # read along with the headers
        unreader.buf = io.BytesIO()
        self.ahead = memoryview(ahead[: self.reader.length])
        if len(ahead) > self.reader.length:  # a pipelined next request: not ours
            unreader.unread(ahead[self.reader.length :])

    def readinto(self, buf: memoryview | bytearray) -> int:
        view = memoryview(buf).cast("B")
        want = min(len(view), self.reader.length)
        if want <= 0:
            return 0
        if self.ahead:
            n = min(want, len(self.ahead))
            view[:n] = self.ahead[:n]
            self.ahead = self.ahead[n:]
        else:
            try:
                n = self.sock.recv_into(view, want)
            except TimeoutError:
                self.body.failed = True  # the connection is unusable: gunicorn closes it
                raise  # a stalled client: its own 400 (web/error_bodies.py)
            except OSError:
                self.body.failed = True
                raise InvalidArgument(_CUT) from None  # reset by the client: bad input
            if n == 0:  # the client hung up mid-body
                self.body.failed = True
                return 0
        self.reader.length -= n
        return n

    def read(self, size: int | None = -1) -> bytes:
        """Up to `size` bytes (all that is left when negative), short only at the end."""
        left = self.reader.length
        size = left if size is None or size < 0 else min(size, left)
        out = bytearray(size)
        got = 0
        while got < size and (n := self.readinto(memoryview(out)[got:])):
            got += n
        del out[got:]
        return bytes(out)

    def give_back(self) -> None:
        """Return unread read-ahead to gunicorn, which drains what the app left unread."""
        if self.ahead:
            self.reader.unreader.unread(bytes(self.ahead))
            self.ahead = memoryview(b"")


class CheckedBody:
    """`wsgi.input` read through gunicorn's parser (a chunked body, a JSON one): a body cut
    or malformed on the wire (gunicorn's ChunkMissingTerminator, InvalidChunkSize,
    NoMoreData) is the client's bad input, 400 `invalid_argument`, not a 500 with a
    traceback; what read it (a PUT's store, a JSON parse) keeps nothing of it."""

    def __init__(self, body: Body) -> None:
        self.body = body

    def _checked(self, read: Callable, *args: object) -> bytes:
        try:
            return read(*args)
        except (ParseException, NoMoreData):
            raise InvalidArgument(_CUT) from None
        except TimeoutError:
            raise
        except OSError:  # reset by the client
            raise InvalidArgument(_CUT) from None

    def read(self, size: int | None = None) -> bytes:
        return self._checked(self.body.read, size)

    def readline(self, size: int | None = None) -> bytes:
        return self._checked(self.body.readline, size)

    def readlines(self, size: int | None = None) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self) -> CheckedBody:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def socket_bodies(app: Callable) -> Callable:
    """WSGI middleware installing `SocketBody` (a PUT of known length) or
    `ChunkedSocketBody` (a chunked PUT) where gunicorn's internals are as expected, and
    `CheckedBody` around every other body gunicorn parses."""

    def wrapped(environ: dict, start_response: Callable) -> Iterable[bytes]:
        body, sock = environ.get("wsgi.input"), environ.get("gunicorn.socket")
        usual = (
            environ.get("REQUEST_METHOD") == "PUT"
            and isinstance(body, Body)
            and isinstance(sock, socket.socket)
            and not body.buf.tell()
        )
        reader = getattr(body, "reader", None)
        unreader = getattr(reader, "unreader", None) or getattr(
            getattr(reader, "req", None), "unreader", None)
        fast: SocketBody | ChunkedSocketBody | None = None
        if usual and isinstance(getattr(unreader, "buf", None), io.BytesIO):
            if isinstance(reader, LengthReader):
                fast = SocketBody(body, sock)
            elif isinstance(reader, ChunkedReader) and getattr(reader, "parser", None):
                fast = ChunkedSocketBody(body, sock, _CUT)
        if fast is None:
            if isinstance(body, Body):
                environ["wsgi.input"] = CheckedBody(body)
            return app(environ, start_response)
        environ["wsgi.input"] = fast
        try:
            return app(environ, start_response)
        finally:
            fast.give_back()

    return wrapped
