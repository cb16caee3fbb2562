"""pytest plugin of the conformance suite (entry point ``pytest11: o41_conformance``).

It is loaded by every pytest run in an environment where the project is installed, so it
must stay inert without ``--target``: it adds its options and markers, skips conformance
tests (those with a ``rule`` marker) with a reason, and touches nothing else.
With ``--target`` it builds the :class:`~conformance.env.Env`, gates optional capabilities,
records results by rule id, prints the table and writes ``--conformance-report``.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.client import Client, Trail, normalize_base
from conformance.env import FEATURES, Env
from conformance.model import DEFAULT_PLACES, Topology
from conformance.report import Collector
from conformance.rules import RULES, rule_of, unknown_rules
from conformance.spawn import SpawnedEmulator, emulator_config

COLLECTOR = pytest.StashKey[Collector]()
ENV = pytest.StashKey[Env]()
TRAIL = pytest.StashKey[Trail]()
PREFIX = pytest.StashKey[str]()

SPAWN_READ_KEY = "ak_conformance_reader"
SPAWN_SCOPED_KEY = "ak_conformance_scoped"

PROFILE_NAMES = ("ci", "thorough")


def profile_settings(name: str) -> Any:
    """Hypothesis settings of a ``--conformance-profile``, for the state machine only (never
    loaded globally: the project's own tests keep their profile). Imported lazily so this
    plugin, loaded by every pytest run, does not pay for importing hypothesis."""
    from hypothesis import HealthCheck, Phase, settings

    common: dict[str, Any] = {
        "deadline": None,
        "report_multiple_bugs": False,
        "suppress_health_check": list(HealthCheck),
    }
    if name == "thorough":
        return settings(max_examples=150, stateful_step_count=50, **common)
    return settings(
        max_examples=15,
        stateful_step_count=20,
        database=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        **common,
    )


#: Seconds hypothesis may spend shrinking a failure, per profile (each replay is HTTP).
SHRINK_SECONDS = {"ci": 20.0, "thorough": 180.0}


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("o41-conformance", "o41 Artifacts conformance suite")
    g.addoption("--target", help="API base URL of the implementation, or 'spawn'")
    g.addoption("--api-key", help="write key (default: $O41_ARTIFACTS_API_KEY)")
    g.addoption("--read-key", help="a read-only key; tests needing one skip without it")
    g.addoption(
        "--places",
        default=DEFAULT_PLACES,
        help="the target's locations, cloud/region comma-separated; "
        "the first of each cloud is its default",
    )
    g.addoption("--fallback", help="the target's fallback location (default: first place)")
    g.addoption("--prefix", help="artifact project of this run (default: fresh random)")
    g.addoption("--conformance-report", metavar="FILE.json", help="write results as JSON")
    g.addoption(
        "--conformance-profile",
        choices=PROFILE_NAMES,
        default="ci",
        help="hypothesis profile of the state machine (default ci)",
    )
    g.addoption(
        "--conformance-shrink-seconds",
        type=float,
        help="how long hypothesis may shrink a state machine failure (ci 20, thorough 180)",
    )
    g.addoption(
        "--rules",
        action="append",
        default=[],
        metavar="IDS",
        help="run only tests checking these rule ids (comma-separated)",
    )
    g.addoption("--scenarios", metavar="DIR", help="scenario YAML directory to replay")
    g.addoption(
        "--max-url-wait",
        type=float,
        default=10.0,
        help="longest URL lifetime the expiry test waits out (seconds)",
    )
    g.addoption(
        "--emulator-fault",
        action="append",
        default=[],
        metavar="NAME",
        help="spawn only: start the emulator with --fault NAME",
    )
    g.addoption("--emulator-command", help="spawn only: command to run instead of o41-emulator")
    g.addoption(
        "--emulator-url-lifetime",
        type=int,
        default=3,
        help="spawn only: url_lifetime configured in the emulator (seconds)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rule(*ids): contract rule ids a conformance test checks")
    for name, need in FEATURES.items():
        config.addinivalue_line("markers", f"{name}: optional capability, needs {need}")
    config.addinivalue_line("markers", "scenario: conformance scenario replayed from YAML")
    config.addinivalue_line("markers", "stateful: the conformance hypothesis state machine")
    bad = unknown_rules(_selected_rules(config))
    if bad:
        raise pytest.UsageError(f"--rules: unknown rule ids {bad}; known: {sorted(RULES)}")
    config.stash[PREFIX] = config.getoption("prefix") or f"conf-{secrets.token_hex(4)}"
    target = config.getoption("target")
    if target and target != "spawn":
        if not (config.getoption("api_key") or os.environ.get("O41_ARTIFACTS_API_KEY")):
            raise pytest.UsageError("--target URL needs --api-key or $O41_ARTIFACTS_API_KEY")
    if config.getoption("target"):
        config.stash[COLLECTOR] = Collector()


def _selected_rules(config: pytest.Config) -> list[str]:
    return [r.strip() for arg in config.getoption("rules") for r in arg.split(",") if r.strip()]


def item_rules(item: pytest.Item) -> list[str]:
    """The rule ids of a test: every ``rule`` marker on it, its class, module, param (a
    marker may name clauses, ``FENCE-2.b``; each counts for its rule)."""
    ids: list[str] = []
    for mark in item.iter_markers("rule"):
        bad = unknown_rules(mark.args)
        if bad:
            raise pytest.UsageError(f"{item.nodeid}: unknown rule or clause ids {bad}")
        ids.extend(r for r in map(rule_of, mark.args) if r not in ids)
    return ids


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(_selected_rules(config))
    target = config.getoption("target")
    keep, drop = [], []
    for item in items:
        rules = item_rules(item)
        if not rules:
            keep.append(item)
            continue
        bad = unknown_rules(rules)
        if bad:
            raise pytest.UsageError(f"{item.nodeid}: unknown rule ids {bad}")
        if wanted and not wanted.intersection(rules):
            drop.append(item)
            continue
        item.user_properties.append(("rules", " ".join(rules)))
        if not target:
            item.add_marker(pytest.mark.skip(reason="conformance test: no --target given"))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    collector = item.config.stash.get(COLLECTOR, None)
    rules = item_rules(item)
    if collector is None or not rules:
        return rep
    exc = call.excinfo.value if (call.excinfo is not None and rep.failed) else None
    if rep.skipped and isinstance(rep.longrepr, tuple):
        message = str(rep.longrepr[2])
    elif exc is not None:
        message = f"{type(exc).__name__}: {exc}"
    else:
        message = ""
    trail = item.stash.get(TRAIL, None)
    collector.record(
        item.nodeid,
        rules,
        rep.when,
        rep.outcome,
        exc=exc,
        message=message,
        trail=list(trail) if trail is not None else None,
        duration=rep.duration,
    )
    if rep.failed:
        failed = collector.results[item.nodeid].failed_rules
        rep.user_properties.append(("failed_rules", " ".join(failed)))
    return rep


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR, None)
    if collector is None or not collector.results:
        return
    terminalreporter.write_sep("=", "o41 conformance by rule")
    for line in collector.lines():
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    collector = config.stash.get(COLLECTOR, None)
    path = config.getoption("conformance_report")
    if collector is None or not path:
        return
    env = config.stash.get(ENV, None)
    meta = {
        "target": config.getoption("target"),
        "base": env.base if env else None,
        "prefix": config.stash[PREFIX],
        "profile": config.getoption("conformance_profile"),
        "places": config.getoption("places"),
        "faults": config.getoption("emulator_fault"),
        "selected_rules": _selected_rules(config),
        "capabilities": env.capabilities() if env else {},
        "exitstatus": int(exitstatus),
    }
    collector.write_json(Path(path), meta)


# --- fixtures ------------------------------------------------------------------------


def _spawn(
    config: pytest.Config, workdir: Path, url_lifetime: int | None = None
) -> SpawnedEmulator:
    opt = config.getoption
    proc = SpawnedEmulator(
        workdir,
        faults=opt("emulator_fault"),
        config=emulator_config(
            SPAWN_READ_KEY, SPAWN_SCOPED_KEY, config.stash[PREFIX], url_lifetime
        ),
        command=opt("emulator_command"),
    )
    proc.start()
    return proc


@pytest.fixture(scope="session")
def o41_env(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """The target under test; with ``--target spawn`` an emulator started for the session."""
    opt = pytestconfig.getoption
    target = opt("target")
    if not target:
        pytest.skip("conformance test: no --target given")
    proc: SpawnedEmulator | None = None
    key = opt("api_key") or os.environ.get("O41_ARTIFACTS_API_KEY")
    read_key, scoped_key = opt("read_key"), None
    if target == "spawn":
        proc = _spawn(pytestconfig, tmp_path_factory.mktemp("o41-emulator"))
        target = proc.url
        key = opt("api_key") or proc.key or "ak_local"
        read_key, scoped_key = read_key or SPAWN_READ_KEY, SPAWN_SCOPED_KEY
    env = Env(
        base=normalize_base(target),
        key=key,
        topology=Topology.parse(opt("places"), opt("fallback")),
        prefix=pytestconfig.stash[PREFIX],
        read_key=read_key,
        scoped_key=scoped_key,
        spawned=proc is not None,
        faults=tuple(opt("emulator_fault")),
        max_url_wait=opt("max_url_wait"),
    )
    pytestconfig.stash[ENV] = env
    try:
        yield env
    finally:
        if proc is not None:
            proc.stop()


@pytest.fixture(scope="session")
def o41_expiring_env(
    o41_env: Env, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    """The target for the URL expiry test. With spawn, a second emulator whose URLs live
    ``--emulator-url-lifetime`` seconds (the main one keeps long-lived URLs and uploads);
    otherwise the target itself, whose lifetime the test measures."""
    if not o41_env.spawned:
        yield o41_env
        return
    lifetime = pytestconfig.getoption("emulator_url_lifetime")
    proc = _spawn(pytestconfig, tmp_path_factory.mktemp("o41-emulator-expiry"), lifetime)
    try:
        yield dataclasses.replace(o41_env, base=normalize_base(proc.url))
    finally:
        proc.stop()


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


@pytest.fixture
def o41_reader(o41_env: Env, o41_trail: Trail) -> Client:
    """A client with the read-only key (tests using it carry the ``read_key`` marker)."""
    ok, reason = o41_env.capability("read_key")
    if not ok:
        pytest.skip(reason)
    return o41_env.client(key=o41_env.read_key, trail=o41_trail)


@pytest.fixture
def o41_settings(pytestconfig: pytest.Config) -> Any:
    """Hypothesis settings of the chosen ``--conformance-profile``."""
    return profile_settings(opt_profile(pytestconfig))


@pytest.fixture
def o41_shrink_seconds(pytestconfig: pytest.Config) -> float:
    """How long the state machine may shrink a failure (``--conformance-shrink-seconds``)."""
    given = pytestconfig.getoption("conformance_shrink_seconds")
    return given if given is not None else SHRINK_SECONDS[opt_profile(pytestconfig)]


def opt_profile(config: pytest.Config) -> str:
    return str(config.getoption("conformance_profile"))


@pytest.fixture(autouse=True)
def _o41_gate(request: pytest.FixtureRequest) -> None:
    """Skip a conformance test, with the reason, when the target lacks a capability it
    needs. A no-op for every other test (the plugin is loaded in all pytest runs)."""
    if request.node.get_closest_marker("rule") is None:
        return
    env: Env = request.getfixturevalue("o41_env")
    for feature in FEATURES:
        if request.node.get_closest_marker(feature) is not None:
            ok, reason = env.capability(feature)
            if not ok:
                pytest.skip(reason)
