"""A job's writes into an artifact: its launch (the open), steps staged and committed, retention."""
