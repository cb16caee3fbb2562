"""USAGE: bytes and prices per route, placements."""
