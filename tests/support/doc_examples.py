"""Run the examples of README.md and docs/*.md (Sybil), as a reader would from a fresh clone.

Every fenced block in ``python``, ``bash``/``sh``/``shell`` or ``console`` is an example:

- ``python`` runs in one namespace per document (blocks build on each other), in a fresh
  working directory, with ``tmp_path`` defined, as the docs' own snippets assume;
- ``bash``/``sh``/``shell`` runs with ``bash -euo pipefail`` from the repository root;
- ``console`` runs each ``$ command`` and compares what it prints with the lines below it.

They all talk to one emulator served on ``127.0.0.1:8041`` (the docs' address), with
``O41_ARTIFACTS_API_URL`` and ``O41_ARTIFACTS_API_KEY`` exported as ``serve`` says to, and
holding ``experiments/run-1234`` with one checkpoint (the artifact the docs read).

A block that cannot run here is marked just above it, with its reason::

    <!-- skip: next "starts a server that runs until Ctrl-C" -->

(Sybil's skip directive; the reason shows in pytest's skip report.) New docs/*.md files are
picked up by the pattern in the repository's ``conftest.py``; nothing to register.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

REPO = Path(__file__).resolve().parents[2]
PORT = 8041
URL = f"http://127.0.0.1:{PORT}"
KEY = "ak_local"
SHELLS = ("bash", "sh", "shell")
TIMEOUT = 300
DOC_PATTERNS = ["README.md", "docs/*.md"]
# Fence languages that are not examples to run: configuration and output shown as text.
NOT_RUN = frozenset({"", "yaml", "toml", "json", "text"})


def _shell_env() -> dict[str, str]:
    """The reader's shell: this Python's scripts first on PATH (pytest, o41, o41-emulator),
    and o41's defaults for fencing (the root conftest.py changes them for pytest itself)."""
    env = {k: v for k, v in os.environ.items() if k not in ("O41_ON_FENCED", "O41_FENCE_CHECK")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _run(command: str, what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=REPO,
                          env=_shell_env(), capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


def evaluate_shell(example: Example) -> None:
    """Run a shell block; a non-zero exit fails it with what the block printed."""
    done = _run(example.parsed, "block")
    if done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}"
                             f"\n--- stderr\n{done.stderr[-4000:]}")


def console_sessions(text: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines and the output lines shown under each."""
    sessions: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            sessions.append((line[2:], []))
        elif sessions:
            sessions[-1][1].append(line.rstrip())
    return sessions


def evaluate_console(example: Example) -> None:
    """Run each ``$`` command of a console block; its output must be what the block shows."""
    sessions = console_sessions(example.parsed)
    assert sessions, "a console block without a `$ command` line"
    for command, expected in sessions:
        done = _run(command, "command")
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr}"
        got = [line.rstrip() for line in done.stdout.rstrip("\n").splitlines()]
        while expected and not expected[-1]:
            expected.pop()
        assert got == expected, f"{command} printed:\n" + "\n".join(got)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as serve binds it
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="session")
def docs_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The emulator the docs talk to, on their port, seeded with experiments/run-1234."""
    from emulator.run.served import ServedEmulator

    if not _port_free(PORT):
        reason = f"port {PORT} is taken: the docs' examples talk to {URL}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    emu = ServedEmulator("--port", str(PORT), "--data-dir",
                         str(tmp_path_factory.mktemp("docs") / "data"))
    emu.start()
    try:
        _seed(tmp_path_factory.mktemp("seed"))
        yield URL
    finally:
        emu.stop()


def _seed(where: Path) -> None:
    """One checkpoint of experiments/run-1234, which the README reads and then resumes."""
    import o41
    from o41.config import Settings

    settings = Settings(f"{URL}/api/v1", KEY, None, "docs-seed")
    run = o41.open("o41://experiments/run-1234", resume="latest", settings=settings)
    if run.resume_from is None:
        (where / "model.pt").write_bytes(b"weights at step 1")
        run.save(1, where)


@pytest.fixture
def doc_env(request: pytest.FixtureRequest, docs_emulator: str,
            monkeypatch: pytest.MonkeyPatch,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Per example: the exported variables, and the document's own working directory."""
    namespace = request.node.example.namespace
    if "tmp_path" not in namespace:
        namespace["tmp_path"] = tmp_path_factory.mktemp("doc")
    monkeypatch.chdir(namespace["tmp_path"])
    monkeypatch.setenv("O41_ARTIFACTS_API_URL", f"{docs_emulator}/api/v1")
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", KEY)
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmp")))
    for name in [k for k in os.environ if k.startswith("SKYPILOT_") or k == "O41_PLACE"]:
        monkeypatch.delenv(name)
    # A reader's process has no o41 filesystem made under another test's environment (fsspec
    # caches instances by their arguments, and none are given here)
    import fsspec

    fsspec.get_filesystem_class("o41").clear_instance_cache()
    yield


def _teardown(namespace: dict) -> None:
    """A document may have switched chaos on (docs/emulator.md shows how); switch it off."""
    import requests

    try:
        requests.delete(f"{URL}/_emulator/chaos", timeout=60)
    except requests.RequestException:
        pass


def sybil() -> Sybil:
    parsers = [
        PythonCodeBlockParser(),
        *(CodeBlockParser(language, evaluate_shell) for language in SHELLS),
        CodeBlockParser("console", evaluate_console),
        SkipParser(),
    ]
    return Sybil(parsers=parsers, patterns=DOC_PATTERNS, path=str(REPO),
                 fixtures=["doc_env"], teardown=_teardown)
