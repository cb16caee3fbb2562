"""The fast tier runs on several processes (pytest-xdist), a file to a process.

Half of the fast tier's wall time is waiting: for served emulators and trainers to start,
for subprocesses, for retries and read timeouts that the tests pin down. Two processes on
two cores fill that time with another file's tests. The fast tier as a newcomer types it
(``pytest``, ``pytest -m s3``: the configured test paths, no slow test) is spread over
``O41_TEST_PROCESSES`` processes (default: one per core, at most 2, the size of every
machine the project runs on); ``-n N`` on the command line decides instead, ``-n 0`` runs
in this process. The slow tier stays in one process: its trainers, mutant tables and
stress runs each keep both cores busy, and share them badly. A run that names files or
directories stays in one process unless it says ``-n``: a test being debugged runs as it
always did.

What is sent to a process together: every test of one file, so a module's fixtures are set
up once and its tests run in their order (xdist's ``loadfile``); and every example of
README.md and docs/*.md, since they share one emulator on the docs' port (8041) and each
document's examples build on each other.
"""

from __future__ import annotations

import os
import re

import pytest

ENV_PROCESSES = "O41_TEST_PROCESSES"
DOCS = "docs-on-port-8041"  # the one unit of work of every documentation example


def processes() -> int:
    """How many processes a tier runs on: ``O41_TEST_PROCESSES``, else the cores, at most 2."""
    given = os.environ.get(ENV_PROCESSES, "").strip()
    if given:
        try:
            return max(0, int(given))
        except ValueError:
            raise pytest.UsageError(f"{ENV_PROCESSES}={given!r}: give a number of processes "
                                    "(0 runs the tests in pytest's own process)") from None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(2, cores or 1)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Spread a fast-tier run over processes before xdist reads its options (it does so in
    its own ``pytest_cmdline_main``, which runs after this one)."""
    option = config.option
    if (
        not config.pluginmanager.hasplugin("xdist")
        or hasattr(config, "workerinput")
        or getattr(option, "numprocesses", 0) is not None  # -n given: it decides
        or config.args_source != pytest.Config.ArgsSource.TESTPATHS
        or option.collectonly
        or option.usepdb
        or option.runslow
        or re.search(r"\bslow\b", option.markexpr or "")
    ):
        return
    n = processes()
    if n > 1:
        option.numprocesses = n
        option.dist = "loadfile"


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201 - xdist's types
    """By file, with every documentation example in one unit (see the module's docstring)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ByFileDocsTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return DOCS if path.endswith(".md") else path

    return ByFileDocsTogether(config, log)
