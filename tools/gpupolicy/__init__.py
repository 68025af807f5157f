"""gpupolicy: validate, document and simulate a GitOps policy repository for GPU scheduling."""

__version__ = "0.1.0"
