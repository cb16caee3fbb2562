"""OPEN: resume latest, fresh opens, relaunches, resume_from."""
