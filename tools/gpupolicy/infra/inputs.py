"""Files a user names on the command line (a workload for `explain`, a mig-parted config, shard reports, a
token file): read whole but never past a size limit, so `/dev/zero` or a runaway pipe cannot exhaust memory,
and never a device, socket or folder, which is no file to read. A pipe is read (`explain <(kubectl get job x
-o yaml)`): it blocks only until its writer writes, as any command-line tool's input does. Repository files go
through repopath instead, which refuses pipes: a pull request's FIFO would have no writer at all.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ToolError


def read_given(path: str | Path, limit: int, what: str = "") -> bytes:
    """The bytes of the file at `path`, at most `limit` of them; a ToolError saying why not, prefixed with the
    path (and `what` it should have been, where given)."""
    shown = f"{path}" + (f" ({what})" if what else "")
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise ToolError(f"{shown}: is a folder, not a file")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise ToolError(f"{shown}: is a device or socket, not a file to read")
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise ToolError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise ToolError(f"{shown}: larger than {limit:,} bytes")
    return raw
