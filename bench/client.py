"""Lean HTTP/1.1 clients: the same code drives the emulator and moto, so only servers differ.

The byte movers use the kernel (sendfile up, recv_into a reused buffer down) so that the
client spends as little of the two shared cores as possible; the request-rate driver keeps
16 keep-alive connections busy from one selector loop with pre-built request bytes.
"""

from __future__ import annotations

import http.client
import selectors
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

BUF = 4 << 20


def _conn(url: str) -> tuple[socket.socket, str, str]:
    u = urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port or 80))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    path = u.path + (f"?{u.query}" if u.query else "")
    return sock, f"{u.hostname}:{u.port}", path


def put_file(url: str, path: Path) -> tuple[int, bytes]:
    """PUT the whole file with sendfile; returns (status, response body)."""
    size = path.stat().st_size
    sock, host, target = _conn(url)
    with sock, open(path, "rb") as fh:
        head = (f"PUT {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n"
                "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
        sock.sendall(head.encode())
        sock.sendfile(fh)
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        return resp.status, resp.read()


def get_range(url: str, start: int, stop: int, check: bytes = b"") -> int:
    """GET bytes [start, stop) into a reused buffer; returns the byte count received.

    `check`, when given, must equal the first bytes of the body (a cheap integrity probe).
    """
    sock, host, target = _conn(url)
    buf = bytearray(BUF)
    view = memoryview(buf)
    with sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nRange: bytes={start}-{stop - 1}"
                     "\r\nConnection: close\r\n\r\n".encode())
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        if resp.status not in (200, 206):
            raise RuntimeError(f"GET range -> {resp.status} {resp.read()[:200]!r}")
        got = 0
        first = True
        while n := resp.readinto(view):
            if first and check and bytes(view[: min(n, len(check))]) != check[:n]:
                raise RuntimeError(f"bytes at {start} differ from the file")
            first = False
            got += n
    if got != stop - start:
        raise RuntimeError(f"range {start}-{stop} gave {got} bytes")
    return got


def parallel(jobs: list, fn) -> float:
    """Run fn(*job) for every job in its own thread; returns wall seconds."""
    errors: list[BaseException] = []

    def run(job) -> None:
        try:
            fn(*job)
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return elapsed


def ranged_read(url: str, size: int, parts: int, source: Path) -> float:
    """Read the object as `parts` parallel ranged GETs; returns wall seconds. Each range's
    first 4 KiB are checked against `source`, the file that was uploaded."""
    bounds = [(i * size // parts, (i + 1) * size // parts) for i in range(parts)]
    jobs = []
    with open(source, "rb") as fh:
        for a, b in bounds:
            fh.seek(a)
            jobs.append((url, a, b, fh.read(4096)))
    return parallel(jobs, get_range)


@dataclass
class Rate:
    requests: int
    seconds: float
    errors: int

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


class _Conn:
    """One keep-alive connection of the rate driver."""

    def __init__(self, addr: tuple[str, int], request: bytes, head_only: bool) -> None:
        self.addr, self.request, self.head_only = addr, request, head_only
        self.sock: socket.socket | None = None
        self.buf = b""

    def connect(self, sel: selectors.BaseSelector) -> None:
        self.sock = socket.create_connection(self.addr)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        sel.register(self.sock, selectors.EVENT_READ, self)
        self.buf = b""
        self.sock.send(self.request)

    def close(self, sel: selectors.BaseSelector) -> None:
        if self.sock is not None:
            sel.unregister(self.sock)
            self.sock.close()
            self.sock = None

    def feed(self) -> tuple[int, bool] | None:
        """(status, keep-alive) once a whole response is buffered, else None."""
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = self.buf[:end]
        length, keep = 0, not head.startswith(b"HTTP/1.0")
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length" and not self.head_only:
                length = int(value)
            elif name == b"connection":
                keep = value.strip().lower() != b"close"
        if len(self.buf) < end + 4 + length:
            return None
        self.buf = self.buf[end + 4 + length :]
        return int(head[9:12]), keep


PATIENCE = 60.0  # seconds a window waits past its end for its first answer


def request_rate(url: str, clients: int, seconds: float, method: str = "GET",
                 headers: dict[str, str] | None = None, warmup: float = 0.5) -> Rate:
    """Closed loop: `clients` connections each keep exactly one request in flight."""
    u = urlsplit(url)
    target = u.path + (f"?{u.query}" if u.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {u.hostname}:{u.port}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    sel = selectors.DefaultSelector()
    conns = [_Conn((u.hostname, u.port), request, method == "HEAD") for _ in range(clients)]
    for c in conns:
        c.connect(sel)
    done = errors = 0
    t0 = time.perf_counter()
    start = t0 + warmup
    counting = False
    end = start + seconds
    while True:
        now = time.perf_counter()
        if not counting and now >= start:
            counting, done, errors, t_count = True, 0, 0, now
        # A window with no answer in it measures nothing (a short --quick window on loaded
        # cores, a server's first slow request): it stays open until one arrives.
        if now >= end and (done or now >= end + PATIENCE):
            break
        for key, _ in sel.select(0.5):
            c: _Conn = key.data
            data = c.sock.recv(65536)
            if not data:
                c.close(sel)
                c.connect(sel)
                continue
            c.buf += data
            while (got := c.feed()) is not None:
                status, keep = got
                done += 1
                errors += status >= 400
                if keep:
                    c.sock.send(request)
                else:
                    c.close(sel)
                    c.connect(sel)
                    break
    elapsed = time.perf_counter() - t_count
    for c in conns:
        c.close(sel)
    sel.close()
    return Rate(done, elapsed, errors)


def latencies(fns: list, n: int) -> list[float]:
    """Median seconds of each fn() over `n` rounds (after a warm-up round); the calls are
    interleaved, so a burst of load from elsewhere hits every fn alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [sorted(t)[len(t) // 2] for t in times]
