"""Schemas: Kubernetes OpenAPI and carried CRD schemas, repository files' and the toolkit's own inputs."""
