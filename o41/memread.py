"""Bytes of one file of a version, read into memory by parallel ranged GETs.

What ``cat_file`` and an fsspec read file need: a byte range ``[start, end)`` of a signed
URL, split into up to ``workers`` ranges that each thread receives straight into its slice
of one buffer. A whole file is checked against its sha256; a part of one cannot be.
"""

from __future__ import annotations

import hashlib
import threading
import time

from .dataplane import Connections, RangeReply, Retry, data_plane_error
from .errors import IntegrityError, TransportError
from .local import WORKERS
from .models import FileEntry

MIN_PART = 1024 * 1024
RETRIES = 5


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
    view = memoryview(buf)
    parts = max(1, min(workers, (end - start) // MIN_PART))
    bounds = [(start + i * (end - start) // parts, start + (i + 1) * (end - start) // parts)
              for i in range(parts)]
    own = conns is None
    conns = conns or Connections()
    errors: list[BaseException] = []

    def one(a: int, b: int) -> None:
        try:
            _receive(entry, conns, a, b, view[a - start:b - start])
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    try:
        if parts == 1:
            one(*bounds[0])
        else:
            threads = [threading.Thread(target=one, args=b) for b in bounds]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        if own:
            conns.close()
    if errors:
        raise errors[0]
    if start == 0 and end == entry.size and entry.sha256:
        digest = hashlib.sha256(buf).hexdigest()
        if digest != entry.sha256:
            raise IntegrityError(f"{entry.name}: read {len(buf)} bytes with sha256 {digest}, "
                                 f"expected sha256 {entry.sha256}")
    return bytes(buf)


def _receive(entry: FileEntry, conns: Connections, a: int, b: int, into: memoryview) -> None:
    """Fill ``into`` with bytes ``[a, b)``, asking again from where a cut body stopped."""
    got, failures = 0, 0
    while got < b - a:
        try:
            reply = RangeReply(conns, entry.url or "", a + got, b - 1)
            if reply.status not in (200, 206) or reply.status == 200 and (a + got, b) != (
                    0, entry.size):
                body = reply.body()
                if reply.status >= 500:
                    raise Retry(f"HTTP {reply.status}")
                if reply.status >= 400:
                    raise data_plane_error(f"GET {entry.name}", reply.status, body)
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
            failures += 1
            if failures >= RETRIES:
                raise TransportError(f"GET {entry.name} bytes {a + got}-{b - 1}: {exc}") from exc
            time.sleep(0.05 * failures)


__all__ = ["read_range"]
