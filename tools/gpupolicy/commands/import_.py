"""gpupolicy import --snapshot DIR | --context NAME --name CLUSTER: a running cluster written as this
repository's files (decision 0077).

It reads the snapshot `audit --snapshot` reads (or the live cluster through `audit --context`'s reader),
groups the GPU nodes into pools by identical hardware and flavor, writes clusters/CLUSTER/, pools/<pool>/, the
team folders of namespaces with GPU quotas or LocalQueues, and imports/CLUSTER/migration-plan.yaml, all or
nothing through the transactional writer; what the cluster does not say is a `# QUESTION(import): ...` line,
listed in imports/CLUSTER/questions.yaml, which `validate` reports (IMP001) until it is answered. Exit 2 and
nothing
written when the snapshot cannot be read or a file to write exists already."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import COMMANDS

NAME = "import"
HELP = COMMANDS[NAME]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--snapshot",
        type=Path,
        metavar="DIR",
        help="a folder of `kubectl get ... -o json` lists (the layout `audit --snapshot` "
        "reads, plus resourceflavors, cohorts, localqueues, priorityclasses, namespaces, resourcequotas)",
    )
    source.add_argument(
        "--context", metavar="NAME", help="read the cluster of this kubeconfig context instead"
    )
    parser.add_argument("--kubeconfig", default=None, help="with --context: the kubeconfig file")
    parser.add_argument("--name", required=True, help="the cluster's name in the repository (clusters/NAME)")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the summary and the files, write nothing"
    )


def run(args: argparse.Namespace) -> int:
    from ..errors import ToolError
    from ..importer import inventory, plan, write
    from ..infra import repopath, transaction
    from ..scaffold.common import _new_file, check_name

    check_name("cluster", args.name)
    source = (
        inventory.read_snapshot(args.snapshot)
        if args.snapshot
        else inventory.read_live(args.context, args.kubeconfig)
    )
    nodes = inventory.gpu_nodes(source)
    if not nodes:
        raise ToolError(
            f"{args.snapshot or args.context}: no node carries nvidia.com/gpu.product or GPU "
            "capacity; "
            "nothing to import"
        )
    pools = inventory.group_pools(args.name, nodes)
    steps = plan.migration_plan(pools, source.snapshot.cluster_queues or [])
    operator = inventory.operator_version(source)
    texts, asked = write.files(args.repo, args.name, source, pools, steps, operator)
    if not args.dry_run:
        targets = {}
        for rel, text in texts.items():
            if rel == write.POOLS_CONF:  # the one file that exists: through the trust boundary
                targets[repopath.Reader(args.repo).regular_file(rel)] = text
            else:
                targets[_new_file(args.repo, rel)] = text
        transaction.write_files(targets, journal_root=args.repo)
        from .. import docsgen

        docsgen.refresh(args.repo)  # the new cluster's and pools' pages
    _summary(args, nodes, pools, steps, texts, asked, operator)
    return 0


def _summary(args, nodes, pools, steps, texts, asked, operator) -> None:
    from ..importer.plan import reasons, show
    from ..importer.write import POOLS_CONF

    print(
        f"import {args.name}: {len(nodes)} GPU node(s) in {len(pools)} pool(s); GPU Operator "
        f"{operator or 'not found'}"
    )
    for pool in pools:
        first = pool.first
        drivers = sorted({n.driver or "unknown" for n in pool.nodes})
        print(
            f"  pool {pool.name}: {len(pool.nodes)} x {first.count} {first.model or first.product} "
            f"({pool.values['access'] or 'access not labelled'}), flavor {pool.flavor or 'none'}, "
            f"driver {', '.join(drivers)}, devices {show(_sum(pool.nodes))}"
        )
        for node in pool.nodes:
            for reason in reasons(pool, node):
                print(f"    node {node.name}: {reason}")
    print(f"{'would write' if args.dry_run else 'wrote'} {len(texts)} file(s):")
    for rel in sorted(texts):
        print(f"  {'edited' if rel == POOLS_CONF else 'new'}  {rel}")
    print(f"{len(asked)} open question(s) (`gpupolicy validate` reports each as IMP001 until answered):")
    for line in asked:
        print(f"  {line}")
    print(
        f"migration plan ({len(steps)} step(s), one node out at a time; "
        f"imports/{args.name}/migration-plan.yaml):"
    )
    for step in steps:
        print(
            f"  {step.number}. {step.node} ({step.pool}): during {show(step.during)}; after "
            f"{show(step.after)}; production need {show(step.need)}; {step.verdict}"
        )
    if not steps:
        print("  nothing to migrate: every GPU node is under operator management and agrees with its pool")


def _sum(nodes) -> dict[str, int]:
    from ..importer.plan import _total

    return _total(n.devices for n in nodes)
