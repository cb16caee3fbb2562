"""The state machine of :mod:`conformance.machine`, under the chosen hypothesis profile."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.env import Env

ALL_RULES = (
    "OPEN-1",
    "OPEN-2",
    "OPEN-3",
    "FORK-1",
    "FORK-2",
    "FENCE-1",
    "FENCE-2",
    "FENCE-3",
    "FENCE-4",
    "VER-2",
    "VER-3",
    "VER-4",
    "VER-5",
    "VER-6",
    "VER-7",
    "READ-1",
    "READ-2",
    "READ-3",
    "PLACE-1",
    "PLACE-2",
    "PLACE-3",
    "PLACE-4",
    "XC-1",
    "USAGE-1",
    "AUTH-2",
    "AUTH-1",
)


@pytest.mark.stateful
@pytest.mark.rule(*ALL_RULES)
def test_state_machine_agrees_with_model(
    o41_env: Env, o41_settings: Any, o41_shrink_seconds: float, o41_seed: int
) -> None:
    # Imported here: collecting the suite (e.g. with -m "not stateful") stays hypothesis-free.
    from hypothesis import seed
    from hypothesis.stateful import run_state_machine_as_test

    from conformance.machine import ArtifactsMachine
    from conformance.machine_parts import shrink_time_limit

    with shrink_time_limit(o41_shrink_seconds):
        # The run's seed: the same examples every run of a profile (docs/conformance.md).
        factory = seed(o41_seed)(lambda: ArtifactsMachine(o41_env))
        run_state_machine_as_test(factory, settings=o41_settings)
