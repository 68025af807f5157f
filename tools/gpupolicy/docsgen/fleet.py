"""Fleet overview and one page per cluster with a Mermaid diagram of pools, flavors, queues, cohorts and
teams."""

from __future__ import annotations

import re

from .. import audit
from ..domain import quotas
from ..domain.gpu_resources import is_nvidia_resource
from ..model import Cluster, ClusterQueue, Pool, selects
from . import Context, table
from .quotas import amount_text


def pages(context: Context) -> dict[str, str]:
    result = {"index.md": _overview(context)}
    for cluster in context.fleet.clusters.values():
        result[f"clusters/{cluster.name}.md"] = _cluster_page(context, cluster)
    return result


def _overview(context: Context) -> str:
    text = context.header("Fleet overview")
    rows = []
    for cluster in context.fleet.clusters.values():
        facts = cluster.facts
        gpus = sum(p.gpus for p in cluster.pools)
        rows.append(
            [
                f"[{cluster.name}](clusters/{cluster.name}.md)",
                facts.environment,
                facts.region,
                ", ".join(facts.zones),
                facts.kubernetes_version,
                facts.gpu_operator_version,
                facts.sync_engine,
                len(cluster.pools),
                gpus,
                len(cluster.team_queues()),
            ]
        )
    text += table(
        [
            "cluster",
            "environment",
            "region",
            "zones",
            "Kubernetes",
            "GPU Operator",
            "sync",
            "pools",
            "GPUs",
            "team queues",
        ],
        rows,
    )
    text += "\n## Pools\n\n"
    rows = []
    for cluster in context.fleet.clusters.values():
        for pool in cluster.pools:
            rows.append(
                [
                    cluster.name,
                    pool.name,
                    pool.gpu_model,
                    f"{pool.nodes} x {pool.gpus_per_node}",
                    pool.access_mode,
                    _exposes(pool) or "none",
                    ", ".join(teams_of(cluster, pool)) or "-",
                ]
            )
    text += table(["cluster", "pool", "GPU", "nodes x GPUs", "mode", "exposes", "teams"], rows)
    return text


def _node_id(kind: str, name: str) -> str:
    return f"{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def mermaid(cluster: Cluster) -> str:
    """Zones as subgraphs (a pool spread over zones is drawn once per zone), flavors, queues, cohorts,
    teams."""
    lines = ["flowchart LR"]
    for zone in sorted({z for pool in cluster.pools for z in pool.zones}):
        lines.append(f'  subgraph {_node_id("zone", zone)}["zone {zone}"]')
        for pool in (p for p in cluster.pools if zone in p.zones):
            lines.append(
                '    '
                f'{_node_id("pool", pool.name + "@" + zone)}["{pool.name}<br/>{pool.zones[zone]} '
                'x '
                f'{pool.gpus_per_node} {pool.gpu_model}<br/>{pool.access_mode}"]'
            )
        lines.append("  end")
    for flavor in cluster.flavors.values():
        lines.append(f'  {_node_id("flavor", flavor.name)}(["flavor {flavor.name}"])')
        for pool in cluster.pools_of_flavor(flavor):
            lines += [
                f'  {_node_id("flavor", flavor.name)} --> {_node_id("pool", pool.name + "@" + zone)}'
                for zone in sorted(pool.zones)
            ]
    for cohort in cluster.cohorts.values():
        lines.append(f'  {_node_id("cohort", cohort.name)}{{{{"cohort {cohort.name}"}}}}')
        if cohort.parent:
            lines.append(f'  {_node_id("cohort", cohort.name)} -.-> {_node_id("cohort", cohort.parent)}')
    for queue in cluster.cluster_queues.values():
        lines.append(f'  {_node_id("cq", queue.name)}[/"queue {queue.name}<br/>{queue.tier or "-"}"/]')
        if queue.cohort:
            lines.append(f'  {_node_id("cq", queue.name)} -.-> {_node_id("cohort", queue.cohort)}')
        for flavor in dict.fromkeys(queue.flavors()):
            if flavor in cluster.flavors:
                lines.append(f'  {_node_id("cq", queue.name)} --> {_node_id("flavor", flavor)}')
    drawn: set[tuple[str, str]] = set()
    for local in cluster.local_queues:
        if (local.namespace, local.cluster_queue) in drawn:
            continue  # a namespace with two local queues on the same cluster queue: one edge
        team = cluster.namespaces.get(local.namespace)
        label = f"team {team.team}" if team and team.team else f"namespace {local.namespace}"
        node = _node_id("ns", local.namespace)
        if not any(ns == local.namespace for ns, _ in drawn):
            lines.append(f'  {node}(("{label}"))')
        drawn.add((local.namespace, local.cluster_queue))
        if local.cluster_queue in cluster.cluster_queues:
            lines.append(f'  {node} --> {_node_id("cq", local.cluster_queue)}')
    return "\n".join(lines)


def _cluster_page(context: Context, cluster: Cluster) -> str:
    """What the on-call engineer looks for first comes first: the pools, then the queues, then the diagram."""
    facts = cluster.facts
    text = context.header(f"Cluster {cluster.name}")
    text += f"{facts.description}\n\n" if facts.description else ""
    text += table(
        ["environment", "region", "zones", "Kubernetes", "GPU Operator", "synced by"],
        [
            [
                facts.environment,
                facts.region,
                ", ".join(facts.zones),
                facts.kubernetes_version,
                facts.gpu_operator_version,
                facts.sync_engine,
            ]
        ],
    )
    text += "\n## Pools\n\n"
    snapshot = context.snapshots.get(cluster.name)
    free = audit.free_by_pool(snapshot, {p.name: p for p in cluster.pools}) if snapshot else None
    rows = []
    for pool in cluster.pools:
        drivers = ", ".join(
            d.version for d in cluster.nvidia_drivers if selects(d.node_selector, pool.node_labels)
        )
        zones = ", ".join(f"{z} {n}" for z, n in pool.zones.items())
        row = [
            f"[{pool.name}](../pools/{pool.name}.md)",
            pool.gpu_model,
            f"{pool.nodes} x {pool.gpus_per_node} ({zones})",
            pool.access_mode,
            _exposes(pool) or "none",
        ]
        row += [_free_text(pool, free[pool.name])] if free is not None else []
        rows.append(row + [", ".join(teams_of(cluster, pool)) or "-", drivers or "-"])
    text += (
        "Each pool's name leads to how its nodes join it: the labels and taints they must carry, as "
        "kubelet flags, a Karpenter NodePool and a Cluster API MachineDeployment.\n\n"
    )
    if snapshot:
        taken = audit.snapshot_time(snapshot)
        text += (
            f"*Free now* is read from the audit snapshot taken {taken:%Y-%m-%d %H:%M} UTC"
            if taken
            else "*Free now* is read from an audit snapshot with no timestamp"
        ) + (
            ": each node's allocatable devices less what its running pods request; cordoned nodes free "
            "nothing.\n\n"
        )
    text += table(
        [
            "pool",
            "GPU",
            "nodes x GPUs (per zone)",
            "mode",
            "exposes",
            *(["free now"] if free is not None else []),
            "teams",
            "driver",
        ],
        rows,
    )
    text += (
        "\n## Cluster queues\n\nNominal GPU quota per pool; the [quota matrix](../quotas.md) adds "
        "borrowing.\n\n"
    )
    rows = [
        [q.name, q.team or "-", q.tier or "-", q.workload or "-", q.cohort or "-", _queue_quota(cluster, q)]
        for q in cluster.cluster_queues.values()
    ]
    text += table(["queue", "team", "tier", "workload", "cohort", "GPU quota"], rows)
    text += (
        "\n## Diagram\n\nTeams submit to local queues, which feed cluster queues; queues borrow through "
        "cohorts "
    )
    text += (
        "(dotted) and draw quota from flavors, and each flavor selects one pool of nodes in its failure "
        "zones.\n\n"
    )
    text += f"```mermaid\n{mermaid(cluster)}\n```\n"
    return text


def teams_of(cluster: Cluster, pool: Pool) -> list[str]:
    """The teams whose cluster queues draw quota from a flavor that selects the pool."""
    return sorted(
        {
            q.team
            for q in cluster.cluster_queues.values()
            if any(
                cluster.flavors.get(f) and pool in cluster.pools_of_flavor(cluster.flavors[f])
                for f in q.flavors()
            )
        }
        - {""}
    )


def _exposes(pool: Pool) -> str:
    return ", ".join(amount_text(resource, amount, [pool]) for resource, amount in pool.capacity.items())


def _free_text(pool: Pool, free: dict[str, int]) -> str:
    """`5 GPUs`, `12 × 1g.10gb, 0 × 2g.20gb`: a zero is shown, since "none free" is the answer being
    sought."""
    return (
        ", ".join(amount_text(resource, free.get(resource, 0), [pool]) for resource in pool.capacity) or "-"
    )


def _queue_quota(cluster: Cluster, queue: ClusterQueue) -> str:
    """`eu-h200-train 28 GPUs; eu-a100-mig 16 × 1g.10gb, 8 × 2g.20gb`: the GPU quotas that are not zero."""
    by_flavor: dict[str, list[str]] = {}
    for flavor, quota in queue.quotas():
        if is_nvidia_resource(quota.name) and quota.nominal:
            pools = quotas.pools_of(cluster, flavor)
            by_flavor.setdefault(flavor, []).append(amount_text(quota.name, quota.nominal, pools))
    return "; ".join(f"{flavor} {', '.join(amounts)}" for flavor, amounts in by_flavor.items()) or "-"
