"""Hostile pull request: a rule plugin of the pull request's own. Importing it is running PR code, so it
leaves
a marker where the hostile-PR job (.ci/hostile-pr) looks for one."""

import os
from pathlib import Path

Path(os.environ.get("HOSTILE_MARKER_DIR", "/nonexistent"), "plugin-ran").write_text("the PR's plugin ran\n")

ID = "EVIL-PWN001"
SUMMARY = "never runs"


def check(fleet):
    return iter(())
