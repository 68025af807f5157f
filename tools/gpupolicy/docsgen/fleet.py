"""Fleet overview and one page per cluster with a Mermaid diagram of pools, flavors, queues, cohorts and teams."""

from __future__ import annotations

import re

from ..model import Cluster, selects
from . import Context, table


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
        rows.append([f"[{cluster.name}](clusters/{cluster.name}.md)", facts.environment, facts.region,
                     ", ".join(facts.zones), facts.kubernetes_version, facts.gpu_operator_version,
                     facts.sync_engine, len(cluster.pools), gpus, len(cluster.team_queues())])
    text += table(["cluster", "environment", "region", "zones", "Kubernetes", "GPU Operator", "sync", "pools",
                   "GPUs", "team queues"], rows)
    text += "\n## Pools\n\n"
    rows = []
    for cluster in context.fleet.clusters.values():
        for pool in cluster.pools:
            capacity = ", ".join(f"`{k}` {v}" for k, v in pool.capacity.items()) or "none"
            teams = sorted({q.team for q in cluster.cluster_queues.values()
                            if any(cluster.flavors.get(f) and pool in cluster.pools_of_flavor(cluster.flavors[f])
                                   for f in q.flavors())} - {""})
            rows.append([cluster.name, pool.name, pool.gpu_model, f"{pool.nodes} x {pool.gpus_per_node}",
                         pool.access_mode, capacity, ", ".join(teams) or "-"])
    text += table(["cluster", "pool", "GPU", "nodes x GPUs", "mode", "exposes", "teams"], rows)
    return text


def _node_id(kind: str, name: str) -> str:
    return f"{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def mermaid(cluster: Cluster) -> str:
    """Zones as subgraphs (a pool spread over zones is drawn once per zone), flavors, queues, cohorts, teams."""
    lines = ["flowchart LR"]
    for zone in sorted({z for pool in cluster.pools for z in pool.zones}):
        lines.append(f'  subgraph {_node_id("zone", zone)}["zone {zone}"]')
        for pool in (p for p in cluster.pools if zone in p.zones):
            lines.append(f'    {_node_id("pool", pool.name + "@" + zone)}["{pool.name}<br/>{pool.zones[zone]} x '
                         f'{pool.gpus_per_node} {pool.gpu_model}<br/>{pool.access_mode}"]')
        lines.append("  end")
    for flavor in cluster.flavors.values():
        lines.append(f'  {_node_id("flavor", flavor.name)}(["flavor {flavor.name}"])')
        for pool in cluster.pools_of_flavor(flavor):
            lines += [f'  {_node_id("flavor", flavor.name)} --> {_node_id("pool", pool.name + "@" + zone)}'
                      for zone in sorted(pool.zones)]
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
    facts = cluster.facts
    text = context.header(f"Cluster {cluster.name}")
    text += (f"{facts.description}\n\n" if facts.description else "")
    text += table(["environment", "region", "zones", "Kubernetes", "GPU Operator", "synced by"],
                  [[facts.environment, facts.region, ", ".join(facts.zones), facts.kubernetes_version,
                    facts.gpu_operator_version, facts.sync_engine]])
    text += "\n## Diagram\n\nTeams submit to local queues, which feed cluster queues; queues borrow through cohorts "
    text += "(dotted) and draw quota from flavors, and each flavor selects one pool of nodes in its failure zones.\n\n"
    text += f"```mermaid\n{mermaid(cluster)}\n```\n\n## Pools\n\n"
    rows = []
    for pool in cluster.pools:
        drivers = ", ".join(d.version for d in cluster.nvidia_drivers if selects(d.node_selector, pool.node_labels))
        rows.append([pool.name, pool.gpu_model, f"{pool.nodes} x {pool.gpus_per_node}",
                     ", ".join(f"{z}: {n}" for z, n in pool.zones.items()), pool.access_mode,
                     ", ".join(f"`{k}` {v}" for k, v in pool.capacity.items()) or "none", drivers or "-"])
    text += table(["pool", "GPU", "nodes x GPUs", "nodes per zone", "mode", "exposes", "driver"], rows)
    text += "\n## Cluster queues\n\n"
    rows = [[q.name, q.team or "-", q.tier or "-", q.workload or "-", q.cohort or "-",
             ", ".join(f"{f}/`{r.name}` {r.nominal}" for f, r in q.quotas() if r.name.startswith("nvidia.com/"))]
            for q in cluster.cluster_queues.values()]
    text += table(["queue", "team", "tier", "workload", "cohort", "GPU quota (flavor/resource nominal)"], rows)
    return text
