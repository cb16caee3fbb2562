"""The docs' examples are tests: README.md and every docs/*.md run through Sybil; and the
two tiers of the project's tests.

How the examples run, and how a block is marked to skip, is in ``tests/support/doc_examples.py``.

Tiers: a test marked ``slow`` (the mutant table, the real trainers' preemption matrices,
the soak and race stress, the shared-dashboard world, the legal variants, SIGKILL recovery,
the suite's repeat and seed runs, the bench smoke) is left out of a plain ``pytest``:

- ``pytest`` is the fast tier, every test not marked ``slow``;
- ``pytest -m slow`` is the slow tier only; any ``-m`` that names ``slow`` decides alone
  (``-m "slow or not slow"`` is both tiers), and ``--runslow`` adds the slow tier to
  whatever else is selected (``pytest --runslow`` is everything, ``pytest -m s3 --runslow``
  every S3-backend test);
- ``-m`` without ``slow`` (``pytest -m s3``) selects within the fast tier;
- a test file or test named on the command line (``pytest tests/conformance/test_mutants.py``,
  ``pytest tests/emulator/test_race_stress.py::test_x``) runs all its selected tests, slow or not;
  a directory (``pytest tests``) is a tier like the plain ``pytest``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.doc_examples import doc_env, docs_emulator, sybil

# In this pytest process a fenced o41 filesystem raises o41.Fenced instead of ending the
# process (its default, for trainers), and runs are not watched in the background; tests of
# those defaults run trainers as subprocesses, whose environment leaves these out.
os.environ.setdefault("O41_ON_FENCED", "raise")
os.environ.setdefault("O41_FENCE_CHECK", "0")

__all__ = ["doc_env", "docs_emulator"]

# The tiers run on two processes, a file to each (its docstring says how and why).
pytest_plugins = ["tests.support.parallel"]

pytest_collect_file = sybil().pytest()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow", action="store_true", default=False,
        help="run the slow tier too (tests marked slow; `-m slow` runs only those)")


def _named_files(config: pytest.Config) -> set[Path]:
    """The files the command line names itself (a file or a test in it), not directories
    and not the configured testpaths."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return set()
    base = config.invocation_params.dir
    named = set()
    for arg in config.args:
        path = (base / arg.split("::", 1)[0]).resolve()
        if path.is_file():
            named.add(path)
    return named


#: Doc examples of the slow tier, by a command they run: the README's whole conformance run
#: against a served emulator (the fast tier runs the suite against the emulator once, in
#: tests/conformance/test_conformance_emulator.py), and docs/fsspec.md's Ray Train recipe (77 s of a
#: real Ray cluster starting on 2 cores).
SLOW_EXAMPLES = ("pytest conformance --target http", "import ray\n",
                 # the replay of docs/fsspec.md (26 s); tests/replay/test_fsspec_replay.py
                 # runs the same trainer under the same scenario in the fast tier
                 "train_fsspec.py o41://experiments/spot-hop")


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark the slow doc examples at collection, before `-m` selects. A block under a skip
    directive is never marked: `-m slow` would leave the directive out and run the block."""
    example = getattr(item, "example", None)
    parsed = getattr(example, "parsed", None)
    if not isinstance(parsed, str) or not any(cmd in parsed for cmd in SLOW_EXAMPLES):
        return
    above = example.document.text[:example.start].rstrip()
    if above.endswith("-->") and re.match(r"<!--\s*skip:", above[above.rfind("<!--"):]):
        return
    item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave the slow tier out unless asked for (see the module's docstring)."""
    if config.getoption("--runslow") or re.search(r"\bslow\b", config.option.markexpr or ""):
        return
    named = _named_files(config)
    kept, left = [], []
    for item in items:
        slow = item.get_closest_marker("slow") is not None
        (left if slow and Path(item.path).resolve() not in named else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
