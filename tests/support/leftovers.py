"""Servers a test run left running: every process the session started carries a tag in
its environment, and at the end none of them may still be an emulator, gunicorn, weed or
PostgreSQL (tests/conftest.py fails the run and ends them).

The tag, not the process tree, tells them apart: a server whose parent died is adopted by
init, and other test runs on the same machine (with other tags) are none of this run's.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Collection
from pathlib import Path

TAG = "O41TESTS_SESSION"
#: What a left-over server's command line holds.
SERVERS = ("emulator serve", "o41-emulator", "gunicorn", "weed", "postgres")


def tag_session() -> None:
    """A new tag for this run (a pytest run inside a test is a run of its own)."""
    os.environ[TAG] = secrets.token_hex(8)


def _read(pid: str, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:  # gone meanwhile, or not ours to read
        return b""


def _parent(pid: int) -> int:
    stat = _read(str(pid), "stat").decode(errors="replace")
    fields = stat.rsplit(")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 else 0


def _under(pid: int, roots: Collection[int]) -> bool:
    seen = 0
    while pid > 1 and seen < 64:
        if pid in roots:
            return True
        pid, seen = _parent(pid), seen + 1
    return False


def left_running(keep: Collection[int] = ()) -> dict[int, str]:
    """This run's server processes still alive (zombies aside), by pid: their command
    lines. Those under a pid in `keep` (the session's own PostgreSQL) are not counted."""
    tag = os.environ.get(TAG)
    if not tag or not Path("/proc").is_dir():
        return {}
    marker = f"{TAG}={tag}".encode()
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if marker not in _read(entry.name, "environ").split(b"\0"):
            continue
        stat = _read(entry.name, "stat").decode(errors="replace")
        if stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]:
            continue
        cmdline = _read(entry.name, "cmdline").replace(b"\0", b" ").decode(errors="replace")
        if any(s in cmdline for s in SERVERS) and not _under(int(entry.name), keep):
            found[int(entry.name)] = cmdline.strip()
    return found


def end_leftovers(keep: Collection[int] = (), grace: float = 15.0) -> dict[int, str]:
    """Wait up to `grace` seconds for this run's servers to exit, then SIGKILL those still
    there; returns them (empty when the run left nothing). Every stop of the run has
    returned by now, so the wait is only for workers killed with their group a moment
    ago; a longer one (a loaded machine) fails nothing but a run that leaked already."""
    deadline = time.monotonic() + grace
    found = left_running(keep)
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = left_running(keep)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return found


def postmaster(data_dir: Path) -> int:
    """The pid of a PostgreSQL cluster's postmaster (the first line of postmaster.pid)."""
    try:
        return int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
