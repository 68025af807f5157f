"""gpupolicy inspect: the fleet model — clusters, pools and their capacity, flavors, queues, priorities."""

from __future__ import annotations

import argparse
import json

from .. import pipeline
from ..describe import fleet_as_dict
from . import FORMAT_HELP

NAME = "inspect"
HELP = "print the fleet model: pools with capacity per resource, flavors, cluster queues with quotas, priorities"


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
        print(f"cluster {cluster['name']} ({cluster['environment']}, {cluster['region']}, k8s "
              f"{cluster['kubernetesVersion']}, GPU Operator {cluster['gpuOperatorVersion']}, {cluster['syncEngine']})")
        for pool in cluster["pools"]:
            capacity = ", ".join(f"{k}={v}" for k, v in pool["capacity"].items()) or "nothing"
            print(f"  pool {pool['name']}: {pool['nodes']}x{pool['gpusPerNode']} {pool['gpuModel']} "
                  f"{pool['accessMode']} -> {capacity}")
        for queue in cluster["clusterQueues"]:
            quotas = ", ".join(f"{q['flavor']}/{q['resource']}={q['nominal']}" for q in queue["quotas"]
                               if q["resource"].startswith("nvidia.com/"))
            print(f"  queue {queue['name']} [{queue['tier'] or '-'}] cohort={queue['cohort'] or '-'}: {quotas}")
        for pc in cluster["priorityClasses"]:
            print(f"  priority {pc['name']}={pc['value']} ({pc['tier'] or '-'}, {pc['preemptionPolicy']})")
    for pool in data["unassignedPools"]:
        print(f"pool {pool['name']} is in no cluster")
    return 0
