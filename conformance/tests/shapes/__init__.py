"""API: reply and error shapes, malformed input, the order of errors."""
