"""gpupolicy: validate, document and simulate a GitOps policy repository for GPU scheduling."""

from pathlib import Path

__version__ = "0.1.0"
# The package's folder: the carried data (schemas/, data/) and the source the cache salts cover sit under it,
# wherever in the package a module that reads them lives.
PACKAGE_DIR = Path(__file__).resolve().parent
