"""Conformance suite for the o41 Artifacts v1 contract.

Run it with ``pytest conformance --target URL`` (or ``pytest --pyargs conformance``
after installation); docs/conformance.md has the options. The package is deliberately
independent of ``emulator``: it has its own HTTP client (:mod:`conformance.client`) and its
own model of the rules (:mod:`conformance.model`), so it can judge any implementation,
including ours. Failures are :class:`RuleViolation` (an ``AssertionError``) carrying the
rule id; ``RULES`` maps every id to its one-line text.
"""

from conformance.client import Client
from conformance.client import Reply
from conformance.model import Model
from conformance.model import Place
from conformance.model import Topology
from conformance.rules import RULES
from conformance.rules import RuleViolation

__all__ = ["RULES", "Client", "Model", "Place", "Reply", "RuleViolation", "Topology"]
