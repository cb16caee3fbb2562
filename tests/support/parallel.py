"""The tiers run on several processes (pytest-xdist), a file to a process.

Half of the fast tier's wall time is waiting: for served emulators and trainers to start,
for subprocesses, for retries and read timeouts that the tests pin down. Two processes on
two cores fill that time with another file's tests. A run of the tiers as a newcomer types
it (``pytest``, ``pytest -m slow``, ``pytest -m s3``: the configured test paths) is spread
over ``O41_TEST_PROCESSES`` processes (default: one per core, at most 2, the size of every
machine the project runs on); ``-n N`` on the command line decides instead, ``-n 0`` runs
in this process. A run that names files or directories stays in one process unless it says
``-n``: a test being debugged runs as it always did.

What is sent to a process together (xdist's ``loadgroup``, a group per file): every test of
one file, so a module's fixtures are set up once and its tests run in their order; and
every example of README.md and docs/*.md in one group, since they share one emulator on the
docs' port (8041) and each document's examples build on each other.
"""

from __future__ import annotations

import os

import pytest

ENV_PROCESSES = "O41_TEST_PROCESSES"
DOCS_GROUP = "docs-on-port-8041"


def processes() -> int:
    """How many processes a tier runs on: ``O41_TEST_PROCESSES``, else the cores, at most 2."""
    given = os.environ.get(ENV_PROCESSES, "").strip()
    if given:
        try:
            return max(0, int(given))
        except ValueError:
            raise pytest.UsageError(f"{ENV_PROCESSES}={given!r}: give a number of processes "
                                    "(0 runs the tests in pytest's own process)") from None
    return min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Spread a tier run over processes before xdist reads its options (it does so in its
    own ``pytest_cmdline_main``, which runs after this one)."""
    option = config.option
    if (
        not config.pluginmanager.hasplugin("xdist")
        or hasattr(config, "workerinput")
        or getattr(option, "numprocesses", 0) is not None  # -n given: it decides
        or config.args_source != pytest.Config.ArgsSource.TESTPATHS
        or option.collectonly
        or option.usepdb
    ):
        return
    n = processes()
    if n > 1:
        option.numprocesses = n
        option.dist = "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Name each test's group (its file, or the docs' group) before xdist's worker reads
    the groups; without ``loadgroup`` the marks change nothing."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        doc = getattr(item, "example", None) is not None
        item.add_marker(pytest.mark.xdist_group(DOCS_GROUP if doc else item.nodeid.split("::")[0]))
