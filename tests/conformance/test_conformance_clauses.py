"""Every clause of docs/contract.md is checked by at least one conformance test.

The suite is collected in a subprocess (no target needed: collection alone reads the
markers, including the ones parametrization and scenario files add), and each test's
``rule`` marker arguments are read back. The state machine counts for rules only: a clause
needs a test aimed at it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conformance.rules import CLAUSES, RULES, clauses_of_rule, rule_of, unknown_rules
from tests.support.deadlines import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]

_DUMP_PLUGIN = """
import json, os

def pytest_collection_finish(session):
    out = {}
    for item in session.items:
        ids = []
        for mark in item.iter_markers("rule"):
            ids.extend(a for a in mark.args if a not in ids)
        out[item.nodeid] = ids
    with open(os.environ["O41_MARKER_DUMP"], "w") as fh:
        json.dump(out, fh)
"""


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Node id -> rule and clause ids of every conformance test, as pytest collects them."""
    work = tmp_path_factory.mktemp("markers")
    (work / "o41_marker_dump.py").write_text(_DUMP_PLUGIN)
    dump = work / "markers.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(work), os.environ.get("PYTHONPATH", "")]),
        "O41_MARKER_DUMP": str(dump),
    }
    cmd = [sys.executable, "-m", "pytest", "conformance", "--collect-only", "-q"]
    cmd += ["-p", "o41_marker_dump", "-p", "no:cacheprovider", "-p", "no:randomly"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(dump.read_text())


def _aimed(markers: dict[str, list[str]]) -> dict[str, list[str]]:
    """Tests aimed at clauses: everything but the state machine, which names rules only."""
    return {node: ids for node, ids in markers.items() if "test_stateful.py" not in node}


def test_every_marker_names_a_known_rule_or_clause(markers: dict[str, list[str]]) -> None:
    bad = {node: unknown_rules(ids) for node, ids in markers.items() if unknown_rules(ids)}
    assert bad == {}


def test_every_conformance_test_names_a_clause(markers: dict[str, list[str]]) -> None:
    """Example tests and scenarios name clauses, so a failure charges the exact sentence."""
    vague = sorted(
        node for node, ids in _aimed(markers).items() if not any(i in CLAUSES for i in ids)
    )
    assert vague == []


def test_every_clause_has_a_test(markers: dict[str, list[str]]) -> None:
    counts = Counter(i for ids in _aimed(markers).values() for i in ids if i in CLAUSES)
    untested = [c for c in CLAUSES if counts[c] == 0]
    assert untested == [], f"clauses without a conformance test: {untested}"


def test_every_rule_splits_into_clauses() -> None:
    assert {rule_of(c) for c in CLAUSES} == set(RULES)
    for rule in RULES:
        letters = [c.rsplit(".", 1)[1] for c in clauses_of_rule(rule)]
        assert letters == [chr(ord("a") + i) for i in range(len(letters))], rule


def test_clause_ids_match_contract_doc() -> None:
    text = (REPO / "docs" / "contract.md").read_text()
    table = text[text.index("## Clauses") :]
    ids = re.findall(r"^\| ([A-Z]+-\d\.[a-z]) \|", table, re.MULTILINE)
    assert ids == list(CLAUSES)
