"""VER-1 to VER-4: names, immutable versions, steps after the latest, commits."""
