"""The emulator's settings: the table of every setting and its sources (`config`), their ranges
(`bounds`), the named deliberate faults (`faults`) and the `Policy` the rules read instead of
the faults' names (`policy`). No database, no Flask: `o41-emulator --help` loads these.
"""
