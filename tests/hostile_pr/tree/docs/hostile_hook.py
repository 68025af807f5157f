"""Hostile pull request: an mkdocs hook of the pull request's own; loading it is running PR code."""

import os
from pathlib import Path

Path(os.environ.get("HOSTILE_MARKER_DIR", "/nonexistent"), "hook-ran").write_text(
    "the PR's mkdocs hook ran\n"
)
