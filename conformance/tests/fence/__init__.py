"""FENCE: epochs, fencing of older boxes, refused opens that fence nobody."""
