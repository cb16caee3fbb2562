"""READ: latest, signed URLs, ranges, URL lifetimes (the data plane)."""
