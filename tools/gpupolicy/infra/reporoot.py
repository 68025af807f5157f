"""Where the policy repository is: a module of its own so that commands which need only that (`rules`, the
command line itself) do not import the pipeline."""

from __future__ import annotations

from pathlib import Path

from ..errors import ToolError


def find_repo_root(start: Path) -> Path:
    """The nearest directory at or above `start` that has clusters/ or pools/ (the policy repository)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / "clusters").is_dir() or (candidate / "pools").is_dir():
            return candidate
    raise ToolError(
        f"{start} is not inside a policy repository (no clusters/ or pools/ above it); pass --repo DIR"
    )
