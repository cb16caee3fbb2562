"""Large buffers the kernel hands over zero-filled and already mapped, for bytes received
or staged by the megabyte.

``bytearray(n)`` of a fresh process's memory takes a page fault per 4 KiB on its first
fill (and zeroes every page twice: the kernel, then ``memset``). A DCP load receives its
read-ahead runs into such buffers, and the faults were a fifth of its client CPU
(``perf``): an anonymous mapping populated in one call (``MAP_POPULATE``) costs one
system call per buffer instead. Least client CPU of a 256 MiB DCP load, same-run A/B at
load ~12.5: 0.61 s with ``bytearray``, 0.48 s with these.
"""

from __future__ import annotations

import mmap

_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # Linux only; elsewhere faulted as used

MIN_MAPPED = 1024 * 1024  # smaller buffers: a bytearray (a mapping costs two system calls)

Buffer = bytearray | mmap.mmap


def zeroed(size: int) -> Buffer:
    """``size`` writable zero bytes, faulted in at once where the platform can; unmapped
    when the last reference (or view) to it goes."""
    if size < MIN_MAPPED or not _FLAGS:  # small, or no anonymous mappings here
        return bytearray(size)
    return mmap.mmap(-1, size, flags=_FLAGS | _POPULATE)


__all__ = ["MIN_MAPPED", "Buffer", "zeroed"]
