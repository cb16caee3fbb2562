"""Shared fixtures of the client and replay tests: a live emulator (tests/support/served.py)
and a faulty file server.

Test modules load them with ``pytest_plugins = ["tests.support.client_fixtures"]``;
tests/conftest.py belongs to the emulator's tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.served import Emulator

# Set for the pytest process by the root conftest.py (fencing raises, no background watch);
# kept in-process, left out of a subprocess's environment.
IN_PROCESS = ("O41_ON_FENCED", "O41_FENCE_CHECK")


def start_emulator(data_dir: Path, *extra: str) -> Emulator:
    """Start the emulator on a free port and wait until ``/_emulator/health`` answers."""
    emu = Emulator("--data-dir", str(data_dir), *extra)
    emu.start()
    return emu


def stop_emulator(emu: Emulator) -> None:
    emu.kill()


@pytest.fixture(scope="session")
def served_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """One emulator for the session, served as a program (`o41-emulator serve`) so trainers
    in other processes reach it; tests isolate themselves by random artifact names. Not the
    installed plugin's ``o41_emulator`` (emulator/run/pytest_fixture.py: in this process,
    reset for each test), which tests/emulator/test_pytest_fixture.py exercises."""
    emu = start_emulator(tmp_path_factory.mktemp("emulator-data"))
    yield emu
    stop_emulator(emu)


@pytest.fixture
def o41_location() -> str:
    """A fresh, random artifact location, so tests never share state."""
    return f"o41://tests/run-{secrets.token_hex(4)}"


@pytest.fixture
def o41_env(served_emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """Point this process's client at the emulator, with no SkyPilot variables set."""
    for name in list(os.environ):
        if name.startswith(("SKYPILOT_", "O41_")) and name not in IN_PROCESS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("O41_ARTIFACTS_API_URL", served_emulator.api)
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", served_emulator.key)
    return served_emulator


# -- a small file server with faults, for the data plane --------------------------------------


@dataclass
class FileServer:
    """Serves ``files`` by path with Range support, stores PUTs and answers what they
    received; can cut bodies or corrupt bytes."""

    files: dict[str, bytes] = field(default_factory=dict)
    cut_after: int | None = None
    cuts_left: int = 0
    fail_from_offset: int | None = None
    corrupt: bool = False  # GETs serve one byte flipped
    corrupt_puts: bool = False  # PUTs store (and answer) one byte flipped
    served: int = 0
    ranges: list[tuple[int, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    base: str = ""

    def url(self, path: str) -> str:
        return f"{self.base}/{path}"


def _handler(state: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            """Quiet: tests read ``state`` instead."""

        def do_PUT(self) -> None:  # noqa: N802 - http.server's naming
            """Store the body and answer what was received, as the service does (VER-6);
            with ``corrupt_puts``, one byte of it arrives flipped."""
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if state.corrupt_puts and body:
                body = bytes([body[0] ^ 1]) + body[1:]
            name = self.path.lstrip("/")
            state.files[name] = body
            answer = json.dumps({"name": name, "size": len(body),
                                 "sha256": hashlib.sha256(body).hexdigest()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def do_GET(self) -> None:  # noqa: N802
            data = state.files.get(self.path.lstrip("/"))
            if data is None:
                self.send_error(404)
                return
            start, end = 0, len(data) - 1
            if m := re.match(r"bytes=(\d+)-(\d+)", self.headers.get("Range", "")):
                start, end = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
            with state.lock:
                state.ranges.append((start, end))
                failing = state.fail_from_offset is not None and end >= state.fail_from_offset
                cut = state.cut_after if state.cuts_left > 0 else None
                if cut is not None:
                    state.cuts_left -= 1
            if failing:
                self.send_error(500)
                return
            body = data[start:end + 1]
            if state.corrupt:
                body = bytes([body[0] ^ 1]) + body[1:]
            self.send_response(206 if "Range" in self.headers else 200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.end_headers()
            sent = body[:cut] if cut is not None else body
            # Counted before the bytes go out: a client that has its whole body may check
            # ``served`` before this thread runs again (the race of a loaded machine).
            with state.lock:
                state.served += len(sent)
            try:
                self.wfile.write(sent)
            except OSError:
                with state.lock:
                    state.served -= len(sent)  # the client hung up: nothing counts as served
                raise
            if cut is not None:
                self.close_connection = True

    return Handler


@pytest.fixture
def data_server() -> Iterator[FileServer]:
    """A threaded file server on a free port, for download and upload tests."""
    state = FileServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
