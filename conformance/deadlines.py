"""Every conformance test ends by its deadline (``--test-deadline``); hooks of the plugin.

Each request already ends by ``--request-deadline`` (:mod:`conformance.transport`), but a
test sends many, and hypothesis' state machine many more: a target that answers every
request just before its deadline could still hold the run for hours. So each phase of a
test (set-up, body, teardown) gets the test's deadline, enforced with ``SIGALRM``, which
interrupts whatever the main thread is blocked on. The exception is a ``BaseException``
that is not one of pytest's outcomes, so hypothesis does not take it for a failing example
and start shrinking it; pytest reports the phase as failed, naming the option.

Where there is no ``SIGALRM`` (Windows) or tests run outside the main thread, tests have
no deadline of their own; their requests still do.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["DEFAULT_TEST_DEADLINE", "DeadlinePassed", "deadline_of"]

#: Seconds per test phase by profile: the ci state machine takes under a minute at load 9.
DEFAULT_TEST_DEADLINE = {"ci": 300.0, "thorough": 3600.0}


class DeadlinePassed(BaseException):
    """A test phase ran past ``--test-deadline``."""


def deadline_of(config: pytest.Config) -> float:
    """This run's deadline per test phase in seconds (0: none)."""
    given = config.getoption("test_deadline")
    if given is not None:
        return float(given)
    return DEFAULT_TEST_DEADLINE.get(str(config.getoption("conformance_profile")), 300.0)


def _armed(item: pytest.Item, phase: str) -> Generator[None, Any, Any]:
    seconds = deadline_of(item.config)
    usable = (
        seconds > 0
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
        and item.get_closest_marker("rule") is not None
    )
    if not usable:
        return (yield)

    def expire(signum: int, frame: Any) -> None:
        raise DeadlinePassed(
            f"the test's {phase} ran past its {seconds:g} s deadline "
            "(--test-deadline S raises it)"
        )

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _armed(item, "set-up"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _armed(item, "body"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _armed(item, "teardown"))
