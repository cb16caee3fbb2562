"""``o41-emulator replay``: run a real training command as the boxes of a scenario.

A sibling of ``conformance``, not a part of the emulator: it talks to the emulator only over
HTTP, and starts one as a program through ``emulator.run.served`` (never importing the app).
Modules: ``scenario`` (the ``boxes:`` key of a scenario file), ``proxy`` (a recording proxy
in front of the emulator, one path prefix per box), ``runner`` (launch, preempt, relaunch),
``checks`` (the violations), ``table`` (the per-hop report), ``command`` (the click command).
"""

from .checks import Violation, check
from .scenario import Box, Preempt, Scenario, find_scenario, load_scenario

__all__ = ["Box", "Preempt", "Scenario", "Violation", "check", "find_scenario", "load_scenario"]
