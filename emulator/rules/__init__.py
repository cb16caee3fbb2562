"""The contract in plain Python, no Flask: each module takes values and a `Backend`, returns
dicts, and raises the `ApiError`s of `emulator.core.errors`; the web layer calls one rule per
request, and every statement a rule needs is a function of `emulator.store`.
"""
