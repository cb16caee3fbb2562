"""The server's memory: glibc's malloc arenas are capped, which kept RSS creeping under a
mixed load (the soak's figures are in docs/reliability.md; `python -m bench --soak 600`
measures it), and the master loads nothing only the workers use, since every page it holds
counts again in each worker it forks (docs/reliability.md, "Where the memory goes while
streaming")."""

from __future__ import annotations

import gc
import platform
import subprocess
import sys

import pytest

from emulator.run import server
from emulator.settings.config import Settings


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="arenas are glibc's")
def test_the_arena_cap_is_set_unless_the_user_set_one(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert server.fewer_malloc_arenas() is True
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert server.fewer_malloc_arenas() is False


def test_the_master_imports_no_web_stack():
    """What `serve` imports before gunicorn forks: the app, Flask and werkzeug are not."""
    code = ("import sys\n"
            "from emulator.run import cli, server\n"
            "from emulator.state import backend, nodes\n"
            "from emulator.rules import identity, upkeep\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('flask', 'werkzeug', 'jinja2') or m in ('emulator.web.app', 'emulator.web')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_master_freezes_its_objects_before_each_fork(tmp_path):
    with server.bind("127.0.0.1", 0) as sock:
        app = server.EmulatorServer(Settings(data_dir=tmp_path), sock, workers=1, threads=1)
    assert app.cfg.pre_fork is server.freeze_before_fork
    try:
        app.cfg.pre_fork(None, None)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_serve_opens_no_control_socket_that_other_emulators_would_share(live_factory,
                                                                        tmp_path):
    """gunicorn's default control socket is one path per user: every emulator would take it
    from the one before, and any process of the user could resize this one through it."""
    home, runtime = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    runtime.mkdir()
    emu = live_factory(env={"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)})
    assert emu.http.request("GET", "/_emulator/health").status == 200
    assert list(home.iterdir()) == [] and list(runtime.iterdir()) == []
