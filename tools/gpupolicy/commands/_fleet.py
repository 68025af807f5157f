"""Loading the fleet for a subcommand that works on part of it (audit, simulate). Not a subcommand (no NAME)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the commands import the toolkit lazily, to keep `gpupolicy --help` fast
    from ..model import Fleet


def load_fleet_or_error(args: argparse.Namespace, every_cluster: bool = False) -> tuple[Fleet | None, str]:
    """The fleet of `args.repo` (only `args.cluster` when given, unless `every_cluster`: a run over some clusters
    reads only their sources, not docs/examples/), or None and a message saying why it failed."""
    from ..errors import ToolError
    from ..pipeline import load_fleet

    try:
        return load_fleet(Path(args.repo), [args.cluster] if args.cluster and not every_cluster else None), ""
    except ToolError as exc:
        return None, str(exc)
    except Exception as exc:  # the fleet could not be built: say so, never a traceback
        return None, f"cannot load the fleet from {args.repo}: {exc}"
