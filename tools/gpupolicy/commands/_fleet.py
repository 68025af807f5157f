"""Loading the fleet for a subcommand that works on part of it (audit, simulate, recommend). Not a subcommand
(no NAME)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

DEFAULT_TRACES = "../shared/traces"

if TYPE_CHECKING:  # the commands import the toolkit lazily, to keep `gpupolicy --help` fast
    from ..model import Fleet


def load_fleet_or_error(args: argparse.Namespace, every_cluster: bool = False) -> tuple[Fleet | None, str]:
    """The fleet of `args.repo` (only `args.cluster` when given, unless `every_cluster`: a run over some
    clusters
    reads only their sources, not docs/examples/), or None and a message saying why it failed."""
    from ..errors import ToolError
    from ..pipeline import load_fleet

    try:
        return load_fleet(Path(args.repo), [args.cluster] if args.cluster and not every_cluster else None), ""
    except ToolError as exc:
        return None, str(exc)
    except Exception as exc:  # the fleet could not be built: say so, never a traceback
        return None, f"cannot load the fleet from {args.repo}: {exc}"


def fleet_and_cluster(args: argparse.Namespace, every_cluster: bool = False):
    """(fleet, the cluster --cluster names or the first, "") or (None, None, what is wrong); `every_cluster`
    loads the whole fleet, examples included (`load_fleet_or_error`)."""
    fleet, error = load_fleet_or_error(args, every_cluster)
    if fleet is None:
        return None, None, error
    if not fleet.clusters:
        message = (
            f"no cluster {args.cluster!r} in {args.repo}" if args.cluster else (f"no clusters in {args.repo}")
        )
        return None, None, message
    name = args.cluster or sorted(fleet.clusters)[0]
    if name not in fleet.clusters:
        return None, None, f"no cluster {name!r}; known: {', '.join(sorted(fleet.clusters))}"
    return fleet, fleet.clusters[name], ""


def traces_folder(args: argparse.Namespace) -> Path:
    """Where --workload mixed reads ITP and openb: --traces, or DEFAULT_TRACES next to the repository."""
    return args.traces if args.traces is not None else Path(args.repo) / DEFAULT_TRACES
