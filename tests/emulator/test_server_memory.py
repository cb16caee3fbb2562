"""The server caps glibc's malloc arenas, which kept RSS creeping under a mixed load
(the soak's figures are in docs/reliability.md; `python -m bench --soak 600` measures it)."""

from __future__ import annotations

import platform

import pytest

from emulator import server


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="arenas are glibc's")
def test_the_arena_cap_is_set_unless_the_user_set_one(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert server.fewer_malloc_arenas() is True
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert server.fewer_malloc_arenas() is False
