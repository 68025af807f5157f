"""The fleet model as plain data: what `gpupolicy inspect` prints, and what docs and diffs compare."""

from __future__ import annotations

from typing import Any

from ..model import Cluster, ClusterQueue, Fleet, Pool, selects
from . import quotas


def pool_as_dict(pool: Pool, cluster: Cluster | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": pool.name,
        "path": pool.path,
        "gpuModel": pool.gpu_model,
        "nodes": pool.nodes,
        "gpusPerNode": pool.gpus_per_node,
        "gpus": pool.gpus,
        "zones": dict(pool.zones),
        "accessMode": pool.access_mode,
        "sharing": pool.sharing,
        "capacity": dict(pool.capacity),
        "nodeLabels": dict(pool.node_labels),
        "taints": [t.__dict__ for t in pool.taints],
        "team": pool.team,
        "clusters": list(pool.clusters),
    }
    if pool.mig_layout:
        data["mig"] = {"layout": pool.mig_layout, "strategy": pool.mig_strategy}
    if pool.time_slicing_replicas:
        data["timeSlicing"] = {"replicas": pool.time_slicing_replicas, "renamed": pool.rename_shared}
    if cluster is not None:
        drivers = [d.version for d in cluster.nvidia_drivers if selects(d.node_selector, pool.node_labels)]
        data["driverVersions"] = drivers
        data["flavors"] = sorted(
            f.name for f in cluster.flavors.values() if pool in cluster.pools_of_flavor(f)
        )
        data["headroom"] = quotas.headroom(cluster, pool)
    return data


def queue_as_dict(queue: ClusterQueue) -> dict[str, Any]:
    return {
        "name": queue.name,
        "team": queue.team,
        "tier": queue.tier,
        "workload": queue.workload,
        "cohort": queue.cohort,
        "namespaceSelector": queue.namespace_selector,
        "preemption": queue.preemption,
        "quotas": [
            {
                "flavor": flavor,
                "resource": q.name,
                "nominal": q.nominal,
                "borrowingLimit": q.borrowing_limit,
                "lendingLimit": q.lending_limit,
            }
            for flavor, q in queue.quotas()
        ],
    }


def cluster_as_dict(cluster: Cluster) -> dict[str, Any]:
    facts = cluster.facts
    return {
        "name": cluster.name,
        "environment": facts.environment,
        "region": facts.region,
        "zones": list(facts.zones),
        "kubernetesVersion": facts.kubernetes_version,
        "gpuOperatorVersion": facts.gpu_operator_version,
        "syncEngine": facts.sync_engine,
        "objects": len(cluster.objects),
        "pools": [pool_as_dict(p, cluster) for p in cluster.pools],
        "flavors": [
            {
                "name": f.name,
                "nodeLabels": f.node_labels,
                "pools": [p.name for p in cluster.pools_of_flavor(f)],
                "capacity": quotas.flavor_capacity(cluster, f.name),
            }
            for f in cluster.flavors.values()
        ],
        "clusterQueues": [queue_as_dict(q) for q in cluster.cluster_queues.values()],
        "cohorts": [
            {"name": c.name, "parent": c.parent, "declared": c.obj is not None}
            for c in cluster.cohorts.values()
        ],
        "localQueues": [
            {"name": q.name, "namespace": q.namespace, "clusterQueue": q.cluster_queue}
            for q in cluster.local_queues
        ],
        "priorityClasses": [
            {
                "name": p.name,
                "value": p.value,
                "tier": p.tier,
                "globalDefault": p.global_default,
                "preemptionPolicy": p.preemption_policy,
            }
            for p in cluster.priority_classes.values()
        ],
        "workloadPriorityClasses": [
            {"name": p.name, "value": p.value, "tier": p.tier}
            for p in cluster.workload_priority_classes.values()
        ],
        "namespaces": sorted(cluster.namespaces),
        "nvidiaDrivers": [
            {"name": d.name, "version": d.version, "nodeSelector": d.node_selector}
            for d in cluster.nvidia_drivers
        ],
    }


def fleet_as_dict(fleet: Fleet) -> dict[str, Any]:
    in_clusters = {p.name for c in fleet.clusters.values() for p in c.pools}
    return {
        "clusters": [cluster_as_dict(c) for c in fleet.clusters.values()],
        "unassignedPools": [pool_as_dict(p) for name, p in fleet.pools.items() if name not in in_clusters],
    }
