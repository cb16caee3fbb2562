"""Every byte and every retry: the API's calls, PUTs and ranged GETs to signed URLs."""
