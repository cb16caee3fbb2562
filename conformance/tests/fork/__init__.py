"""FORK: forks from a version into an empty artifact."""
