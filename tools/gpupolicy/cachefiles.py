"""Reading and writing the files of the toolkit's caches (renders, strict-load results, kept graphs).

Parallel runs share a cache, so every write goes to a temporary file that replaces the entry at once; a cache
that cannot be written, or an entry that cannot be read, only costs time. Structured entries are `marshal`
data: plain values, nothing that runs code when read.
"""

from __future__ import annotations

import marshal
import os
from pathlib import Path


def write_bytes(entry: Path, data: bytes) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
        temporary.write_bytes(data)
        temporary.replace(entry)
    except OSError:
        pass


def write_value(entry: Path, value: object) -> None:
    """Keep `value` (a value marshal cannot hold is simply not kept)."""
    try:
        data = marshal.dumps(value)
    except ValueError:
        return
    write_bytes(entry, data)


def read_value(entry: Path) -> object | None:
    """What `write_value` kept; None when there is no entry or it cannot be read."""
    try:
        return marshal.loads(entry.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
