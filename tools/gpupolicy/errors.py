"""Errors that stop the tool (exit 2), as opposed to findings about the repository (exit 1)."""


class ToolError(Exception):
    """The tool could not run: bad usage, a missing dependency, an unreadable repository."""
