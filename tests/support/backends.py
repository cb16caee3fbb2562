"""In-process emulators' settings on each storage backend and metadata database, isolated by
names: ``BACKENDS`` to parametrize with, ``make_settings`` for one test's emulator.

O41_TEST_DATABASE=postgresql: tests/conftest.py starts a PostgreSQL cluster for the session,
and every emulator the tests build or spawn keeps its metadata there instead of in SQLite.
(The conformance suite on PostgreSQL is `python -m bench.postgres -- pytest conformance
--target spawn`: its spawned emulator takes the database from O41_EMULATOR_SERVE_DATABASE.)
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from emulator import Settings

S3 = pytest.param("s3", marks=pytest.mark.s3)
BACKENDS = ["fs", S3]  # parametrize with these: the s3 case is marked, so `-m s3` selects it

ON_POSTGRES = os.environ.get("O41_TEST_DATABASE", "sqlite") == "postgresql"
DATABASE_VAR = "O41_EMULATOR_SERVE_DATABASE"


def storage_settings(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict:
    if kind == "fs":
        return {"storage": "fs"}
    # A bucket suffix per test (make_settings) keeps tests apart on the one server.
    return request.getfixturevalue("s3_server").settings()


def make_settings(tmp_path: Path, request: pytest.FixtureRequest, kind: str = "fs",
                  **overrides) -> Settings:
    from dataclasses import replace

    from emulator.core.locations import Location
    from emulator.settings.config import DEFAULT_LOCATIONS

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
