"""``o41://`` as an fsspec filesystem: reading, writing, and the file objects."""
