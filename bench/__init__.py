"""`python -m bench`: the emulator's performance, each figure beside its reference.

Not installed with the project (run it from the repository root); see docs/performance.md.
"""
