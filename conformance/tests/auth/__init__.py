"""AUTH: keys, their scopes, and the key checked before anything else."""
