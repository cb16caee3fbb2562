"""Profiles and seeds: how much the state machine explores, and from which seed.

A conformance verdict must not change between runs against the same target, so the default
profile (``ci``) runs from a fixed seed: the same examples in the same order every run.
``thorough`` explores more from a fresh random seed; either profile replays a run exactly
with ``--conformance-seed N`` (the seed is printed in the header and in every report).
Hypothesis' example database is off in both: a saved failure replayed first would make a
run depend on the runs before it.
"""

from __future__ import annotations

import secrets
from typing import Any

__all__ = ["DEFAULT_SEED", "PROFILES", "SHRINK_SECONDS", "choose_seed", "profile_settings"]

#: The ci profile's seed when ``--conformance-seed`` is not given.
DEFAULT_SEED = 41

#: name -> (runs of the state machine, steps per run)
PROFILES: dict[str, tuple[int, int]] = {"ci": (15, 20), "thorough": (150, 50)}

#: Seconds hypothesis may spend shrinking a failure, per profile (each replay is HTTP).
SHRINK_SECONDS = {"ci": 20.0, "thorough": 180.0}


def choose_seed(profile: str, given: int | None) -> int:
    """The run's seed: the one given, else fixed for ``ci`` and fresh for ``thorough``."""
    if given is not None:
        return given
    return DEFAULT_SEED if profile == "ci" else secrets.randbelow(2**32)


def profile_settings(name: str) -> Any:
    """Hypothesis settings of a profile, for the state machine only (never loaded globally:
    a project's own tests keep their profile). Imported lazily: collecting the suite without
    the state machine stays hypothesis-free."""
    from hypothesis import HealthCheck
    from hypothesis import Phase
    from hypothesis import settings

    examples, steps = PROFILES[name]
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.target, Phase.shrink],
    )
