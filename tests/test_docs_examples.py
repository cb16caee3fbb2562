"""The docs-as-tests mechanism itself: every doc is picked up, no example slips past it.

The examples run as tests of their own (`pytest README.md docs`, see `doc_examples.py`);
these check that no block escapes them by its fence language, and that a skip has a reason.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.doc_examples import DOC_PATTERNS, NOT_RUN, REPO, SHELLS, sybil

FENCE = re.compile(r"^```(\S*)", re.MULTILINE)
RUN = {"python", "console", *SHELLS}


def docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_doc_is_collected_including_ones_added_later() -> None:
    s = sybil()
    assert all(s.should_parse(path) for path in docs())
    assert s.should_parse(REPO / "docs" / "fsspec.md")  # a doc yet to be written
    assert DOC_PATTERNS == ["README.md", "docs/*.md"]


def test_every_fenced_block_is_run_or_plainly_not_code() -> None:
    for path in docs():
        openers = FENCE.findall(path.read_text())[::2]  # every other fence opens a block
        unknown = sorted(set(openers) - RUN - NOT_RUN)
        assert not unknown, f"{path.name}: fence languages {unknown} are neither run nor text"


def test_every_skip_gives_a_reason() -> None:
    for path in docs():
        for directive in re.findall(r"<!--\s*skip:(.*?)-->", path.read_text()):
            assert re.fullmatch(r'\s*next\s+"[^"]{20,}"\s*', directive), (path.name, directive)
