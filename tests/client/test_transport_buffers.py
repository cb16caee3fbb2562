"""Receive and staging buffers (o41.transport.buffers): zero bytes of the size asked,
writable through a view, whatever kind of memory backs them."""

from __future__ import annotations

import pytest

from o41.transport.buffers import MIN_MAPPED, zeroed


@pytest.mark.parametrize("size", [0, 1, MIN_MAPPED - 1, MIN_MAPPED, 3 * MIN_MAPPED + 5])
def test_zeroed_buffer_holds_size_zero_bytes_and_takes_writes(size: int) -> None:
    buf = zeroed(size)
    view = memoryview(buf)
    assert len(buf) == size and view.tobytes() == bytes(size)
    if size:
        view[size - 1:] = b"x"
        buf[0:1] = b"y"
        assert bytes(view[:1]) == b"y" and bytes(view[size - 1:]) == (b"x" if size > 1 else b"y")
