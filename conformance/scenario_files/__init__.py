"""The scenario files (``*.yaml``), package data: the one copy that the conformance suite
and the replay harness (``o41-emulator replay spot-hop -- ...``) both load."""
