"""Conformance suite for the o41 Artifacts v1 contract.

Run it with ``pytest conformance --target URL`` (or ``pytest --pyargs conformance``
after installation). The package is deliberately independent of ``emulator``: it has its
own HTTP client (:mod:`conformance.client`) and its own model of the rules
(:mod:`conformance.model`), so it can judge any implementation, including ours.
"""

from conformance.rules import RULES, RuleViolation

__all__ = ["RULES", "RuleViolation"]
