"""gpupolicy inspect: the fleet model — clusters, pools and their capacity, flavors, queues, priorities."""

from __future__ import annotations

import argparse
import json
import textwrap

from .. import pipeline
from ..domain.describe import fleet_as_dict
from ..domain.gpu_resources import NVIDIA_DOMAIN, is_nvidia_resource
from . import COMMANDS, FORMAT_HELP

LINE_WIDTH = 110  # a terminal split in two still shows a whole line
CONTINUATION = " " * 6

NAME = "inspect"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", action="append", metavar="NAME", help="only this cluster (repeatable)")
    parser.add_argument("--format", default="text", choices=("text", "json"), help=FORMAT_HELP)


def run(args: argparse.Namespace) -> int:
    fleet = pipeline.load_fleet(args.repo, clusters=args.cluster)
    data = fleet_as_dict(fleet)
    if args.format == "json":
        print(json.dumps(data, indent=2))
        return 0
    for cluster in data["clusters"]:
        print(
            f"cluster {cluster['name']} ({cluster['environment']}, {cluster['region']}, k8s "
            f"{cluster['kubernetesVersion']}, GPU Operator {cluster['gpuOperatorVersion']}, "
            f"{cluster['syncEngine']})"
        )
        print("\n".join(_pool_line(pool) for pool in cluster["pools"]))
        print("\n".join(_queue_line(queue) for queue in cluster["clusterQueues"]))
        for pc in cluster["priorityClasses"]:
            print(f"  priority {pc['name']}={pc['value']} ({pc['tier'] or '-'}, {pc['preemptionPolicy']})")
    for pool in data["unassignedPools"]:
        print(f"pool {pool['name']} is in no cluster")
    return 0


def _short(resource: str) -> str:
    """`nvidia.com/mig-1g.10gb` -> `mig-1g.10gb`: every resource inspect prints is NVIDIA's."""
    return resource.removeprefix(NVIDIA_DOMAIN)


def _wrapped(text: str) -> str:
    return textwrap.fill(text, width=LINE_WIDTH, subsequent_indent=CONTINUATION, break_on_hyphens=False)


def _pool_line(pool: dict) -> str:
    """`pool NAME: NODESxGPUS MODEL MODE, RESOURCE CAPACITY (HEADROOM not in quota), ...`."""
    parts = [
        f"{_short(resource)} {amount}{_headroom_note(pool['headroom'].get(resource))}"
        for resource, amount in pool["capacity"].items()
    ]
    return _wrapped(
        f"  pool {pool['name']}: {pool['nodes']}x{pool['gpusPerNode']} {pool['gpuModel']} "
        f"{pool['accessMode']}; {', '.join(parts) or 'no capacity known'}"
    )


def _headroom_note(free: float | None) -> str:
    if free is None:
        return ""
    if free < 0:
        return f" (over-promised by {-free:g})"
    return " (all in quota)" if free == 0 else f" ({free:g} in no quota)"


def _queue_line(queue: dict) -> str:
    """`queue NAME [TIER] cohort=C: FLAVOR RESOURCE NOMINAL, RESOURCE NOMINAL; FLAVOR ...`: the GPU quotas
    that
    are not zero, grouped by flavor."""
    by_flavor: dict[str, list[str]] = {}
    for quota in queue["quotas"]:
        if is_nvidia_resource(quota["resource"]) and quota["nominal"]:
            by_flavor.setdefault(quota["flavor"], []).append(
                f"{_short(quota['resource'])} {quota['nominal']:g}"
            )
    quotas = "; ".join(f"{flavor} {', '.join(amounts)}" for flavor, amounts in by_flavor.items())
    return _wrapped(
        f"  queue {queue['name']} [{queue['tier'] or '-'}] cohort={queue['cohort'] or '-'}: "
        f"{quotas or 'no GPU quota'}"
    )
