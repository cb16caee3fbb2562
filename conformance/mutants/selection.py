"""Which test files hold which rules' tests, so that a mutant's run collects only those.

A rule's run of the table (``--rules R``) collects the whole suite, ~50 modules and 430
tests, to keep the 5 to 70 of them that carry rule ``R``: with pytest's start forked
(forkserver.py), collecting was most of what a mutant's run cost apart from its tests. The
table now collects the suite once, with this module as a plugin (``-p``) writing every
test's file and rule ids, and each rule's run ``--ignore``s the files that hold no test of
the rule (a file with a test carrying no rule is never ignored: the suite's plugin keeps
such tests in every run). The run still collects ``--pyargs conformance``, so its tests
keep their node ids and their order, and the suite's plugin selects exactly the tests it
would select without the ``--ignore``s: test modules share no state at import and define
their hooks and fixtures for themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Selection"]

OPTION = "--mutants-selection"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, metavar="FILE", help="write each collected test's file and "
                     "rule ids to FILE as JSON (the mutant table's collect-only run)")


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("mutants_selection")
    if not path:
        return
    # The suite's own plugin reads the markers; imported here so that loading this module
    # as a plugin does not import the suite before pytest has set up assertion rewriting.
    from conformance.plugin import item_rules

    rows = [{"path": str(item.path), "ids": item_rules(item)} for item in session.items]
    Path(path).write_text(json.dumps(rows))


def _rule(ident: str) -> str:
    from conformance.report import rule_of

    return rule_of(ident)


@dataclass(frozen=True)
class Selection:
    """Every test of the suite as (file, rule and clause ids), in collection order."""

    rows: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def read(cls, path: Path) -> Selection:
        return cls(tuple((r["path"], tuple(r["ids"])) for r in json.loads(path.read_text())))

    def ignored(self, rules: str) -> list[str] | None:
        """The test files a run with ``--rules RULES`` may leave uncollected (``--ignore``):
        those with no test it would select; None when it would select none at all."""
        wanted = {r.strip() for r in rules.split(",") if r.strip()}
        needed = {path for path, ids in self.rows
                  if not ids or wanted & {*ids, *(_rule(i) for i in ids)}}
        if not needed:
            return None
        return sorted({path for path, _ in self.rows} - needed)
