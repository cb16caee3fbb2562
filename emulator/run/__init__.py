"""The ways to run the emulator, above every other layer: the `o41-emulator` command (`cli`),
gunicorn around the app (`server`), the app in a thread of the caller (`threaded`), the app as a
program started and reaped (`served`, which imports none of the emulator), and the
`o41_emulator` pytest fixture (`pytest_fixture`).
"""
