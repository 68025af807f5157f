"""What a run keeps between runs: one folder, authenticated entries, keys that cover every input."""
