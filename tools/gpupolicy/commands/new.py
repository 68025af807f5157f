"""gpupolicy new pool|team|cluster NAME ... | identity: add a pool, a team or a cluster with every edit it
needs, or make the inherited site, git repository and code owners the fork's own; all or nothing (decision
0076).

The edits are made and validated on a copy of the repository first; the repository is written only when the
copy has no error it did not already have (exit 1 and nothing written otherwise). `--dry-run` prints the files
and the unified diff without writing."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from ..errors import ToolError
from . import COMMANDS

NAME = "new"
HELP = COMMANDS[NAME]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="KIND", required=True)
    pool = actions.add_parser(
        "pool",
        help="a GPU node pool in one cluster: pool files, flavor, driver, "
        "layout, pools.conf, cluster components, rollout-plan stage, optional queue quotas",
    )
    pool.add_argument("name", help="the pool's name: its folder pools/NAME, flavor, driver and config key")
    pool.add_argument("--cluster", required=True, help="the cluster that owns the nodes")
    pool.add_argument(
        "--gpu", required=True, help="GPU model key of the catalog (A100-80GB, H100-80GB, B200, L4 ...)"
    )
    pool.add_argument("--per-node", type=int, required=True, help="GPUs per node")
    pool.add_argument(
        "--zone",
        action="append",
        required=True,
        metavar="ZONE=NODES",
        help="nodes per zone (repeat for each zone)",
    )
    pool.add_argument(
        "--access",
        required=True,
        choices=("exclusive", "time-sliced", "mig"),
        help="whole GPUs, time-sliced replicas, or MIG slices",
    )
    pool.add_argument("--replicas", type=int, default=1, help="time-slicing: pods per GPU")
    pool.add_argument("--layout", default="", help="mig: a layout of the mig-parted config (or a new name)")
    pool.add_argument(
        "--mig-devices",
        default="",
        metavar="PROFILE=N,...",
        help="mig: the slices per GPU of a layout the config does not have for this GPU",
    )
    pool.add_argument("--node-cpu", type=int, required=True, help="one node's vCPUs")
    pool.add_argument("--node-memory", required=True, help="one node's memory (e.g. 2048Gi)")
    pool.add_argument("--description", default="", help="one sentence for pool.yaml and the pool page")
    pool.add_argument(
        "--quota",
        action="append",
        default=[],
        metavar="QUEUE=[RESOURCE:]N,...",
        help="nominal quota for a ClusterQueue on the new flavor (repeat per queue)",
    )
    pool.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    team = actions.add_parser(
        "team",
        help="a team: namespace, quotas, LimitRange, LocalQueues, "
        "RoleBindings, a ClusterQueue and namespace quota in each cluster that serves it",
    )
    team.add_argument(
        "name", help="the team's name: its namespace, folder policies/teams/NAME and ClusterQueue"
    )
    team.add_argument(
        "--cluster", action="append", required=True, help="a cluster that serves the team (repeat)"
    )
    team.add_argument(
        "--tier",
        required=True,
        choices=("production", "training", "batch", "experiment"),
        help="the priority tier (label gpupolicy.io/tier); the queue is modelled on one of it",
    )
    team.add_argument(
        "--workload",
        required=True,
        choices=("training", "inference", "notebook", "batch"),
        help="what the team runs (label gpupolicy.io/workload)",
    )
    team.add_argument("--cohort", default="", help="the ClusterQueue's cohort (default: the tier's cohort)")
    team.add_argument(
        "--queue",
        action="append",
        default=[],
        metavar="NAME",
        help="LocalQueue names (default: the workload's name)",
    )
    team.add_argument("--description", default="", help="one sentence for the namespace")
    team.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    cluster = actions.add_parser(
        "cluster",
        help="a cluster with no pools or teams yet: cluster.yaml, "
        "overlay, GPU Operator values and chart patch, queues/, the sync engine's "
        "entry",
    )
    cluster.add_argument("name", help="the cluster's name: its folder clusters/NAME")
    cluster.add_argument(
        "--environment",
        required=True,
        choices=("test", "staging", "production"),
        help="what the cluster is for (rollout stages and the capacity rules read it)",
    )
    cluster.add_argument("--region", required=True, help="the cloud region (e.g. eu-central-1)")
    cluster.add_argument("--zone", action="append", required=True, help="a zone of the cluster (repeat)")
    cluster.add_argument("--sync-engine", default="flux", choices=("flux", "argocd"), help="flux or argocd")
    cluster.add_argument("--kubernetes-version", default="", help="default: the one every other cluster runs")
    cluster.add_argument(
        "--gpu-operator-version",
        default="",
        help="a GPU Operator release of the catalog (default: the one the other clusters run)",
    )
    cluster.add_argument(
        "--git-url",
        default="",
        help="the repository the sync engine reads (default: the other clusters' one)",
    )
    cluster.add_argument("--description", default="", help="one sentence for cluster.yaml")
    cluster.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    identity = actions.add_parser(
        "identity",
        help="the fork's own runbook site, git repository and "
        "code-owner organization in place of the inherited ones, everywhere they are written",
    )
    identity.add_argument(
        "--site-url",
        default="",
        help="the runbook site (mkdocs.yml site_url and every runbook link), e.g. https://gpu.acme.io/",
    )
    identity.add_argument(
        "--git-url",
        default="",
        help="the repository the clusters sync from (Flux GitRepository, Argo CD sources)",
    )
    identity.add_argument("--org", default="", help="the organization CODEOWNERS names (@ORG/team)")
    identity.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    for kind in (pool, team, cluster, identity):  # --repo after the kind too (the command's own --repo first)
        kind.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="policy repository root")


def run(args: argparse.Namespace) -> int:
    from ..scaffold import common

    if args.action == "pool":
        from ..scaffold import pool

        request = pool.PoolRequest(
            name=args.name,
            cluster=args.cluster,
            gpu=args.gpu,
            per_node=args.per_node,
            zones=_zones(args.zone),
            access=args.access,
            node_cpu=args.node_cpu,
            node_memory=args.node_memory,
            replicas=args.replicas,
            layout=args.layout,
            mig_devices=_devices(args.mig_devices),
            description=args.description,
            quotas=dict(pool.quota_amounts(q) for q in args.quota) or None,
        )
        steps, what = pool.steps(request), f"pool {args.name} in {args.cluster}"
    elif args.action == "cluster":
        from ..scaffold import cluster

        request = cluster.ClusterRequest(
            name=args.name,
            environment=args.environment,
            region=args.region,
            zones=tuple(args.zone),
            sync_engine=args.sync_engine,
            kubernetes_version=args.kubernetes_version,
            gpu_operator_version=args.gpu_operator_version,
            git_url=args.git_url,
            description=args.description,
        )
        steps, what = cluster.steps(request), f"cluster {args.name}"
    elif args.action == "identity":
        from ..scaffold import identity

        request = identity.IdentityRequest(site_url=args.site_url, git_url=args.git_url, org=args.org)
        steps, what = identity.steps(request), "identity"
    else:
        from ..scaffold import team

        request = team.TeamRequest(
            name=args.name,
            clusters=tuple(args.cluster),
            tier=args.tier,
            workload=args.workload,
            cohort=args.cohort,
            queues=tuple(args.queue),
            description=args.description,
        )
        steps, what = team.steps(request), f"team {args.name} in {', '.join(args.cluster)}"
    result = common.scaffold(args.repo, steps)
    if result.errors:
        print(f"new {what}: not written, the edit would add {len(result.errors)} error(s):", file=sys.stderr)
        for error in result.errors:
            print(f"  {error}", file=sys.stderr)
        return 1
    if args.dry_run:
        sys.stdout.write(_diff(args.repo, result))
    else:
        common.apply(args.repo, result)
    verb = "would write" if args.dry_run else "wrote"
    print(
        f"new {what}: {verb} {len(result.texts)} file(s) ({len(result.created)} new); validate adds no error"
    )
    for line in common.describe(result):
        print(line)
    for note in result.notes:
        print(f"note: {note}")
    if not args.dry_run:
        print("next: gpupolicy diff (what the change does), then commit the files above")
    return 0


def _zones(values: list[str]) -> dict[str, int]:
    zones = {}
    for value in values:
        zone, sep, count = value.partition("=")
        if not sep or not count.isdigit():
            raise ToolError(f"--zone {value}: write ZONE=NODES (e.g. us-west-2a=2)")
        zones[zone] = int(count)
    return zones


def _devices(value: str) -> dict[str, int] | None:
    if not value:
        return None
    devices = {}
    for part in value.split(","):
        profile, sep, count = part.partition("=")
        if not sep or not count.isdigit():
            raise ToolError(f"--mig-devices {value}: write PROFILE=N,... (e.g. 1g.23gb=7)")
        devices[profile.removeprefix("nvidia.com/mig-")] = int(count)
    return devices


def _diff(root, result) -> str:
    chunks = []
    for rel, text in result.texts.items():
        before = (
            []
            if rel in result.created
            else (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        )
        chunks += difflib.unified_diff(before, text.splitlines(keepends=True), f"a/{rel}", f"b/{rel}")
    return "".join(chunks)
