"""A device-plugin config's migStrategy differs from the ClusterPolicy's mig.strategy.

## Why it matters
The GPU Operator injects `MIG_STRATEGY` from the ClusterPolicy's `mig.strategy` into the device plugin and GPU
Feature Discovery, and the environment beats the config file. A config that says `migStrategy: mixed` under a
`single` ClusterPolicy therefore does not do what it says: MIG instances appear as `nvidia.com/gpu` instead of
`nvidia.com/mig-<profile>` (or the other way round), and every quota on them is for a resource that never
shows up. (Upstream maintainers suggest per-node strategies via the config file; whichever wins, the two must
agree.) The Helm chart's default strategy is `single`. A pool's own `mig.strategy` must also match the config
its nodes select.

## Bad example
```yaml
# policies/gpu-operator/values.yaml
mig: {strategy: single}
---
# device-plugin config key mig-a100
version: v1
flags: {migStrategy: mixed}
```

## Fix
Use one strategy everywhere: ClusterPolicy (`mig.strategy` in the operator values), every device-plugin
config's `flags.migStrategy` (or leave it unset), and MIG pools' `mig.strategy`.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import (
    plugin_config_location,
    policy_is_helm_values,
    policy_location,
    pool_config,
    section,
)
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet
from .share_common import configs

ID = "SHARE007"
SEVERITY = Severity.ERROR
SUMMARY = "Device-plugin migStrategy differs from ClusterPolicy mig.strategy"
HELM_DEFAULT_STRATEGY = "single"  # gpu-operator chart values.yaml: mig.strategy


def policy_strategy(cluster: Cluster) -> str:
    """The ClusterPolicy's mig.strategy ("" when no ClusterPolicy is known or it leaves the strategy
    unset)."""
    if cluster.cluster_policy is None:
        return ""
    strategy = section(cluster.cluster_policy.spec, "mig", "strategy")
    if strategy:
        return str(strategy)
    return HELM_DEFAULT_STRATEGY if policy_is_helm_values(cluster) else ""


def _where_set(fleet: Fleet, cluster: Cluster) -> str:
    if not section(cluster.cluster_policy.spec, "mig", "strategy"):
        return " (the Helm chart default)"
    location = policy_location(fleet, cluster, "mig", "strategy", nearest=False)
    return f" ({location})" if location and location.line else ""


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        wanted = policy_strategy(cluster)
        for entry in configs(cluster):
            flag = section(entry.data, "flags", "migStrategy")
            if not wanted or flag is None or str(flag) == wanted:
                continue
            origin = _where_set(fleet, cluster)
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"device-plugin config {entry.key} sets flags.migStrategy {flag} but the "
                f"ClusterPolicy mig.strategy is {wanted}{origin}; the operator's "
                "MIG_STRATEGY "
                "overrides the file, so MIG devices are not advertised as this config says",
                hint=f"set flags.migStrategy: {wanted} (or remove it), or change mig.strategy for "
                "the "
                "whole cluster",
                **at(plugin_config_location(fleet, entry, "flags", "migStrategy")),
            )
        for pool in cluster.pools:
            entry = pool_config(cluster, pool)
            flag = section(entry.data, "flags", "migStrategy") if entry else None
            if not pool.mig_strategy or flag is None or str(flag) == pool.mig_strategy:
                continue
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"MIG pool {pool.name} declares mig.strategy {pool.mig_strategy} but its "
                f"nodes run device-plugin config {entry.key} with flags.migStrategy {flag}",
                hint="make the pool's mig.strategy and its config's flags.migStrategy agree",
                **at(fleet.locate_file(pool.path, "spec", "mig", "strategy")),
            )
