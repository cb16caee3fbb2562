"""The download's running sha256: blocks landing in any order give the file's digest."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from o41.transport.inorder import InOrderHash, ReadBack


@st.composite
def blocks_in_some_order(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]], set[int]]:
    data = draw(st.binary(min_size=0, max_size=4000))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(data)), max_size=12))) | {0, len(data)})
    blocks = list(zip(cuts, cuts[1:], strict=False))
    order = draw(st.permutations(blocks))
    earlier = draw(st.sets(st.integers(0, max(0, len(blocks) - 1)))) if blocks else set()
    return data, list(order), earlier


@settings(max_examples=60, deadline=None)
@given(blocks_in_some_order())
def test_blocks_in_any_order_hash_to_the_file_digest(
        case: tuple[bytes, list[tuple[int, int]], set[int]]) -> None:
    data, order, earlier = case
    with tempfile.TemporaryFile() as f:
        fd = f.fileno()
        os.ftruncate(fd, len(data))
        h = InOrderHash(fd, len(data))
        scratch = ReadBack(7)  # small: read-backs take several turns
        for i, (a, b) in enumerate(order):
            os.pwrite(fd, data[a:b], a)
            if i in earlier:  # written by an interrupted earlier run, noted on resume
                h.note(a, b)
            else:
                h.written(a, memoryview(data)[a:b], scratch)
        assert h.finish(scratch) == hashlib.sha256(data).hexdigest()


def test_blocks_from_many_threads_hash_to_the_file_digest() -> None:
    data = os.urandom(64 * 4096 + 5)
    blocks = [(a, min(a + 4096, len(data))) for a in range(0, len(data), 4096)]
    with tempfile.TemporaryFile() as f:
        fd = f.fileno()
        os.ftruncate(fd, len(data))
        h = InOrderHash(fd, len(data))

        def worker(mine: list[tuple[int, int]]) -> None:
            scratch = ReadBack(1000)
            for a, b in mine:
                os.pwrite(fd, data[a:b], a)
                h.written(a, memoryview(data)[a:b], scratch)

        threads = [threading.Thread(target=worker, args=(blocks[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert h.finish(ReadBack(1000)) == hashlib.sha256(data).hexdigest()
