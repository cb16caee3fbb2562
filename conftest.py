"""The docs' examples are tests: README.md and every docs/*.md run through Sybil.

How they run, and how a block is marked to skip, is in ``tests/doc_examples.py``.
"""

from tests.doc_examples import doc_env, docs_emulator, sybil

__all__ = ["doc_env", "docs_emulator"]

pytest_collect_file = sybil().pytest()
