"""Frameworks taught o41's layout (Lightning, DCP, universal-pathlib), found through a table."""
