"""Figures in the docs come from the code, or are not written down (issue 27): a count of
mutants or of lines typed into prose goes stale with the next mutant.

docs/architecture.md names no such count; the mutant table of docs/conformance.md (written
by ``python -m conformance.mutants table --markdown docs/conformance.md``) has one row per
registered mutant and says how many it covers.
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance.mutants import MUTANTS
from conformance.mutants.runner import MARK_BEGIN, MARK_END

DOCS = Path(__file__).resolve().parents[2] / "docs"
COUNT = re.compile(r"\b\d[\d,]* (?:mutants|lines)\b")


def test_architecture_doc_types_no_count_of_mutants_or_lines() -> None:
    text = (DOCS / "architecture.md").read_text()
    assert COUNT.findall(text) == []


def test_conformance_doc_mutant_table_has_a_row_for_every_mutant() -> None:
    text = (DOCS / "conformance.md").read_text()
    table = text[text.index(MARK_BEGIN) : text.index(MARK_END)]
    rows = re.findall(r"^\| `([^`]+)`:", table, re.MULTILINE)
    assert sorted(rows) == sorted(MUTANTS)
    head = re.search(r"(\d+) of (\d+) mutants killed", table)
    assert head is not None and int(head[2]) == len(MUTANTS)
