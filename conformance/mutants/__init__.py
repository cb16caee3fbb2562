"""Mutation testing of the conformance suite: a proxy that breaks one contract clause.

Importing the package imports every ``m_*.py`` module, so :data:`MUTANTS` is complete.
"""

from __future__ import annotations

import importlib
import pkgutil

from conformance.mutants.base import MUTANTS
from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.base import mutant

__all__ = ["MUTANTS", "Mutant", "Request", "Response", "Upstream", "load_all", "mutant"]


def load_all() -> dict[str, type[Mutant]]:
    """Import every ``m_*`` module of this package (each registers its mutants)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("m_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return MUTANTS


load_all()
