"""How long a test waits for a process it started (a pytest run, a CLI, a trainer, a
server's start) before calling it hung.

A guard against a hang, never a time limit: on a 2-core runner shared with six busy
processes a `pytest conformance --collect-only` took over 120 s and an emulator over 30 s
to answer its first health check (2026-12-03, load 13-20), and both failed a README run
that nothing else failed. A test that measures time does it in the bench, not here.
"""

HANG_GUARD = 1800.0

__all__ = ["HANG_GUARD"]
