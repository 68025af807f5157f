"""A pool declares MIG, but its GPU has no MIG or its cluster's GPU Operator does not run MIG.

## Why it matters
A pool with `accessMode: mig` (or a `spec.mig` block) promises MIG slices to its flavor's quotas. Nothing
delivers them when:
- the GPU model has no MIG at all (L4, L40S and the other Ada cards: NVIDIA MIG User Guide, "Supported GPUs");
- the cluster renders no GPU Operator configuration (no ClusterPolicy, no `gpu-operator-values`);
- the ClusterPolicy disables the MIG manager (`migManager.enabled: false`), or names no mig-parted ConfigMap
  (`migManager.config.name`), so the MIG manager never reads the repository's layouts;
- the MIG strategy is `none`: the device plugin then advertises no MIG device at all.
Jobs admitted against the pool's quota then wait for devices no node advertises.

## Bad example
```yaml
# clusters/prod/gpu-operator-values.yaml, for a cluster with a MIG pool
mig:
  strategy: none
```

## Fix
Give the pool a GPU model with MIG (A100, A30, H100, H200, B200, ...) or make it an exclusive or time-sliced
pool; in the GPU Operator values set `mig.strategy` to `mixed` (or `single`), keep `migManager.enabled: true`
and point `migManager.config.name` at the mig-parted ConfigMap.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import policy_location, policy_spec, section
from ..findings import Finding, Location, Severity, at
from ..model import Cluster, Fleet, Pool
from .mig_common import effective_strategy, is_mig_pool, mig_pools, model_of, pool_location

ID = "MIG006"
SEVERITY = Severity.ERROR
SUMMARY = "MIG pool on a GPU without MIG, or in a cluster whose GPU Operator does not run MIG"


def check(fleet: Fleet) -> Iterator[Finding]:
    for pool in fleet.pools.values():
        model = model_of(pool)
        if is_mig_pool(pool) and model is not None and not model.mig_capable:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=",".join(pool.clusters),
                message=f"pool {pool.name} declares MIG (access mode {pool.access_mode}, layout "
                f"{pool.mig_layout}) but {model.key} has no MIG support",
                hint="use a GPU model with MIG, or time-slicing for a GPU without it",
                **at(pool_location(fleet, pool, "gpu", "model")),
            )
    for cluster in fleet.clusters.values():
        for pool in mig_pools(cluster):
            model = model_of(pool)
            if model is not None and not model.mig_capable:
                continue  # reported above, once per pool
            reason = _operator_gap(fleet, cluster, pool)
            if reason is not None:
                message, location = reason
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"pool {pool.name} declares MIG layout {pool.mig_layout}, but {message}",
                    hint="enable MIG in the cluster's GPU Operator values (mig.strategy, migManager)",
                    **at(location),
                )


def _operator_gap(fleet: Fleet, cluster: Cluster, pool: Pool) -> tuple[str, Location | None] | None:
    """Why the cluster's GPU Operator will not partition or advertise the pool's GPUs (None: it will)."""
    if cluster.cluster_policy is None:
        return (
            f"cluster {cluster.name} renders no GPU Operator configuration (no ClusterPolicy and no "
            "ConfigMap gpu-operator/gpu-operator-values)",
            pool_location(fleet, pool, "mig"),
        )
    spec = policy_spec(cluster)
    if section(spec, "migManager", "enabled") is False:
        return (
            f"the ClusterPolicy of cluster {cluster.name} disables the MIG manager (migManager.enabled: "
            "false)",
            policy_location(fleet, cluster, "migManager", "enabled"),
        )
    if not section(spec, "migManager", "config", "name"):
        return (
            f"the ClusterPolicy of cluster {cluster.name} names no mig-parted ConfigMap "
            "(migManager.config.name), so the MIG manager never reads the repository's layouts",
            policy_location(fleet, cluster, "migManager", "config", "name"),
        )
    strategy = effective_strategy(fleet, cluster, pool)
    if strategy.value == "none":
        return (
            f"the MIG strategy is none ({strategy.origin}); the device plugin advertises no MIG device",
            strategy.location or pool_location(fleet, pool, "mig"),
        )
    return None
