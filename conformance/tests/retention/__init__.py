"""VER-7: deleting versions that are not the latest."""
