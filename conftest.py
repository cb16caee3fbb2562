"""The docs' examples are tests: README.md and every docs/*.md run through Sybil.

How they run, and how a block is marked to skip, is in ``tests/doc_examples.py``.
"""

import os

from tests.doc_examples import doc_env, docs_emulator, sybil

# In this pytest process a fenced o41 filesystem raises o41.Fenced instead of ending the
# process (its default, for trainers), and runs are not watched in the background; tests of
# those defaults run trainers as subprocesses, whose environment leaves these out.
os.environ.setdefault("O41_ON_FENCED", "raise")
os.environ.setdefault("O41_FENCE_CHECK", "0")

__all__ = ["doc_env", "docs_emulator"]

pytest_collect_file = sybil().pytest()

# O41_TEST_DATABASE=postgresql: the session starts a PostgreSQL cluster, and every emulator
# the tests build or spawn (the conformance suite's `--target spawn` too, through
# O41_EMULATOR_SERVE_DATABASE) keeps its metadata there instead of in SQLite.
_POSTGRES: list = []


def pytest_configure(config) -> None:
    if os.environ.get("O41_TEST_DATABASE", "sqlite") != "postgresql" or _POSTGRES:
        return
    from bench.postgres import ENV_VAR, Postgres

    pg = Postgres().start()
    _POSTGRES.append(pg)
    os.environ[ENV_VAR] = pg.database("o41_session")


def pytest_unconfigure(config) -> None:
    while _POSTGRES:
        _POSTGRES.pop().stop()
