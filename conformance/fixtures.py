"""Fixtures of the conformance suite (loaded by :mod:`conformance.plugin`).

The target itself is made once at session start by the plugin; these hand it, its clients
and the run's hypothesis settings and seed to the tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.client import Client
from conformance.client import Trail
from conformance.client import normalize_base
from conformance.env import FEATURES
from conformance.env import Env
from conformance.profile import SHRINK_SECONDS
from conformance.profile import profile_settings
from conformance.session import ENV
from conformance.session import EXPIRY
from conformance.session import NAMES
from conformance.session import SEED
from conformance.session import TRAIL
from conformance.session import launch
from conformance.session import secret
from conformance.spawn import SpawnError
from conformance.target import TargetError
from conformance.target import probe


@pytest.fixture(scope="session")
def o41_env(pytestconfig: pytest.Config) -> Env:
    """The target under test, started and probed by the plugin at session start."""
    if not pytestconfig.getoption("target"):
        pytest.skip("conformance test: no --target given")
    return pytestconfig.stash[ENV]


@pytest.fixture(scope="session", autouse=True)
def _o41_junit_properties(
    pytestconfig: pytest.Config, record_testsuite_property: Any
) -> None:
    """The run's target, profile and seed in the JUnit file (a no-op without --junitxml)."""
    if not pytestconfig.getoption("target"):
        return
    record_testsuite_property("o41_target", str(pytestconfig.getoption("target")))
    record_testsuite_property("o41_profile", str(pytestconfig.getoption("conformance_profile")))
    record_testsuite_property("o41_seed", str(pytestconfig.stash[SEED]))
    record_testsuite_property("o41_prefix", pytestconfig.stash[NAMES].prefix)


@pytest.fixture(scope="session")
def o41_expiring_env(
    o41_env: Env, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    """The target for the URL expiry test: ``--expiry-target`` if given; with spawn, a second
    emulator whose URLs live ``--emulator-url-lifetime`` seconds (the main one keeps
    long-lived URLs and uploads); otherwise the target itself. The test measures the lifetime
    from ``urls_expire_at`` either way."""
    given = pytestconfig.getoption("expiry_target")
    if given:
        key = secret(pytestconfig, "expiry_api_key") or o41_env.key
        base = normalize_base(given)
        try:
            probe(base, key, o41_env.artifact("probe", count=False))
        except TargetError as exc:
            pytest.fail(f"--expiry-target: {exc}", pytrace=False)
        yield dataclasses.replace(o41_env, base=base, key=key)
        return
    if not o41_env.spawned:
        yield o41_env
        return
    # Launched at session start beside the target when a selected test named this fixture.
    proc = pytestconfig.stash.get(EXPIRY, None)
    if proc is None:
        lifetime = pytestconfig.getoption("emulator_url_lifetime")
        proc = launch(pytestconfig, tmp_path_factory.mktemp("o41-emulator-expiry"),
                      o41_env.prefix, lifetime, own_database=True)
    try:
        url = proc.wait_ready()
    except SpawnError as exc:
        pytest.fail(f"the expiry target did not start: {exc}", pytrace=False)
    yield dataclasses.replace(o41_env, base=normalize_base(url))


@pytest.fixture
def o41_trail(request: pytest.FixtureRequest) -> Trail:
    """The requests of this test, kept for the report's failure steps."""
    trail = Trail()
    request.node.stash[TRAIL] = trail
    return trail


@pytest.fixture
def o41_api(o41_env: Env, o41_trail: Trail) -> Client:
    """A client with the write key."""
    return o41_env.client(trail=o41_trail)


def _client_with(env: Env, trail: Trail, capability: str, key: str | None) -> Client:
    """A client with ``key``, or the test skipped when the target lacks ``capability``."""
    ok, reason = env.capability(capability)
    if not ok:
        pytest.skip(reason)
    return env.client(key=key, trail=trail)


@pytest.fixture
def o41_reader(o41_env: Env, o41_trail: Trail) -> Client:
    """A client with the read-only key (tests using it carry the ``read_key`` marker)."""
    return _client_with(o41_env, o41_trail, "read_key", o41_env.read_key)


@pytest.fixture
def o41_scoped(o41_env: Env, o41_trail: Trail) -> Client:
    """A client with the prefix-scoped key (tests using it carry the ``scoped_key`` marker)."""
    return _client_with(o41_env, o41_trail, "scoped_key", o41_env.scoped_key)


@pytest.fixture
def o41_seed(pytestconfig: pytest.Config) -> int:
    """The run's seed (fixed for the ci profile, printed in the header; --conformance-seed)."""
    return int(pytestconfig.stash[SEED])


@pytest.fixture
def o41_settings(pytestconfig: pytest.Config) -> Any:
    """Hypothesis settings of the chosen ``--conformance-profile``."""
    return profile_settings(str(pytestconfig.getoption("conformance_profile")))


@pytest.fixture
def o41_shrink_seconds(pytestconfig: pytest.Config) -> float:
    """How long the state machine may shrink a failure (``--conformance-shrink-seconds``)."""
    given = pytestconfig.getoption("conformance_shrink_seconds")
    profile = str(pytestconfig.getoption("conformance_profile"))
    return given if given is not None else SHRINK_SECONDS[profile]


@pytest.fixture(autouse=True)
def _o41_gate(request: pytest.FixtureRequest) -> None:
    """Skip a conformance test, naming the option that would enable it, when the target
    lacks a capability it needs."""
    if request.node.get_closest_marker("rule") is None:
        return
    env: Env = request.getfixturevalue("o41_env")
    for feature in FEATURES:
        if request.node.get_closest_marker(feature) is not None:
            ok, reason = env.capability(feature)
            if not ok:
                pytest.skip(reason)
