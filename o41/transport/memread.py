"""Bytes of one file of a version, read into memory by parallel ranged GETs.

What ``cat_file`` and an fsspec read file need: byte ranges of a signed URL, each split
into ranges of at least ``MIN_PART`` that threads receive straight into the caller's
buffer (``readinto``: the kernel copies each byte once). The threads are one pool per
process, so their keep-alive connections outlive a call: a read file's hundredth small
read costs a request, not a TCP handshake. A whole file is checked against its sha256; a
part of one cannot be.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import pairwise

from o41.errors import IntegrityError, TransportError
from o41.job import hooks
from o41.local import WORKERS
from o41.models import FileEntry
from o41.transport import retry
from o41.transport.signed import Connections, RangeReply, Retry, data_plane_error

# A request costs the server more than a MiB of sendfile does: below 4 MiB a range is
# not worth splitting, even on a machine whose cores the server shares.
MIN_PART = 4 * 1024 * 1024
POOL_NAME = "o41-read"

_pool: ThreadPoolExecutor | None = None
_conns = Connections()
_pool_lock = threading.Lock()
hooks.at_exit(_conns.close)  # keep-alive connections end with the process, quietly


def shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4 * WORKERS, thread_name_prefix=POOL_NAME)
        return _pool


def fill(entry: FileEntry, segments: list[tuple[int, memoryview]], *,
         workers: int = WORKERS, conns: Connections | None = None) -> None:
    """Receive each ``(offset, view)``: bytes ``[offset, offset + len(view))`` into ``view``.

    Every segment is split into up to ``workers`` parts of at least ``MIN_PART``; all parts
    of all segments run at once, and the first failure is raised once all have ended.
    """
    if not entry.url:
        raise TransportError(f"{entry.name}: the version was read without signed URLs")
    conns = conns or _conns
    parts: list[tuple[int, int, memoryview]] = []
    for offset, view in segments:
        n = len(view)
        if n == 0:
            continue
        k = max(1, min(workers, n // MIN_PART))
        cuts = [i * n // k for i in range(k + 1)]
        parts += [(offset + a, offset + b, view[a:b]) for a, b in pairwise(cuts)]
    if not parts:
        return
    # Inline when there is one part, or when this thread is a pool thread (a pool thread
    # waiting on its own pool could wait forever).
    if len(parts) == 1 or threading.current_thread().name.startswith(POOL_NAME):
        for a, b, view in parts:
            _receive(entry, conns, a, b, view)
        return
    pool = shared_pool()
    futures: list[Future[None]] = [pool.submit(_receive, entry, conns, a, b, view)
                                   for a, b, view in parts[1:]]
    errors: list[BaseException] = []
    try:
        _receive(entry, conns, *parts[0])
    except BaseException as exc:  # re-raised once every other part has stopped
        errors.append(exc)
    for fut in futures:
        exc = fut.exception()
        if exc is not None:
            errors.append(exc)
    if errors:
        raise errors[0]


def read_range(entry: FileEntry, start: int = 0, end: int | None = None, *,
               workers: int = WORKERS, conns: Connections | None = None) -> bytes:
    """Bytes ``[start, end)`` of ``entry`` (clamped to its size), sha256-checked when whole."""
    if not entry.url:
        raise TransportError(f"{entry.name}: the version was read without signed URLs")
    end = entry.size if end is None else min(end, entry.size)
    start = max(0, start)
    if end <= start:
        return b""
    buf = bytearray(end - start)
    fill(entry, [(start, memoryview(buf))], workers=workers, conns=conns)
    if start == 0 and end == entry.size:
        check_sha256(entry, hashlib.sha256(buf).hexdigest(), len(buf))
    return bytes(buf)


def check_sha256(entry: FileEntry, digest: str, size: int) -> None:
    """A whole file's bytes must hash to the sha256 its version lists."""
    if entry.sha256 and digest != entry.sha256:
        raise IntegrityError(f"{entry.name}: read {size} bytes with sha256 {digest}, "
                             f"expected sha256 {entry.sha256}")


def _receive(entry: FileEntry, conns: Connections, a: int, b: int, into: memoryview) -> None:
    """Fill ``into`` with bytes ``[a, b)``, asking again from where a cut body stopped."""
    got = 0
    tries = retry.attempts("GET", entry.name)
    while got < b - a:
        try:
            reply = RangeReply(conns, entry.url or "", a + got, b - 1)
            if reply.status not in (200, 206) or reply.status == 200 and (a + got, b) != (
                    0, entry.size):
                body = reply.body()
                if reply.status >= 400:
                    raise Retry(str(data_plane_error(f"GET {entry.name}", reply.status, body)),
                                reply.status, reply.header("Retry-After") or None)
                raise TransportError(f"GET {entry.name}: HTTP {reply.status} for a ranged GET")
            while got < b - a:
                n = reply.readinto(into[got:])
                if n == 0:
                    break
                got += n
            if got < b - a:
                reply.abandon()
                raise Retry(f"body ended at byte {a + got} of {b}")
            reply.finish()
        except Retry as exc:
            error = (TransportError(str(exc), status=exc.status) if exc.status else
                     TransportError(f"GET {entry.name} bytes {a + got}-{b - 1}: {exc}"))
            tries.after(exc.status, exc.retry_after, error)


__all__ = ["MIN_PART", "check_sha256", "fill", "read_range", "shared_pool"]
