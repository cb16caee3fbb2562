"""Scenario replays from ``conformance/scenario_files/*.yaml`` (one test per file, no code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.replay import ScenarioRunner
from conformance.scenarios import Scenario
from conformance.scenarios import load_scenarios


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" not in metafunc.fixturenames:
        return
    option = metafunc.config.getoption("scenarios")
    scenarios = load_scenarios(Path(option) if option else None)
    metafunc.parametrize(
        "scenario",
        [
            pytest.param(s, id=s.name, marks=[pytest.mark.rule(*s.rules), pytest.mark.scenario])
            for s in scenarios
        ],
    )


def test_scenario_replays_as_expected(o41_env: Env, o41_api: Client, scenario: Scenario) -> None:
    missing = [
        p for p in scenario.needs_locations if Place.parse(p) not in o41_env.topology.locations
    ]
    if missing:
        pytest.skip(f"scenario needs locations the target lacks: {missing}")
    ScenarioRunner(o41_env, o41_api).run(scenario)
