"""A progress bar for people at a terminal; silent in pipes and CI logs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(label: str) -> Iterator:
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True, console=None) as progress:
        task = progress.add_task(label, total=None)

        def advance(rendered) -> None:
            progress.update(task, advance=1, description=f"{label} {rendered.directory}")

        yield advance
