"""The trust boundary (repopath), the strict YAML loader, schemas, caches, atomic multi-file writes, git."""
