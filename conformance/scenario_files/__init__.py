"""Copies of ``fixtures/scenarios/*.yaml`` shipped with the package (package data).

Refreshed with ``python -m conformance.scenarios --sync``; a project test checks they match.
"""
