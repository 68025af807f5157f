"""The MIG strategy differs between pool.yaml, the ClusterPolicy and the device-plugin config.

## Why it matters
Three places name the MIG strategy: the ClusterPolicy's `mig.strategy` (which the operator hands to the device
plugin and GPU Feature Discovery as `MIG_STRATEGY`; the Helm chart's default is `single`), each device-plugin
config's `flags.migStrategy`, and pool.yaml's `spec.mig.strategy`, from which the toolkit computes what the
pool exposes. `mixed` advertises `nvidia.com/mig-1g.10gb` and friends; `single` advertises the same slices as
`nvidia.com/gpu`. When they disagree, the quotas are checked against resource names the nodes do not advertise
and jobs wait forever; which of operator and config file wins is an implementation detail NVIDIA recommends
not to rely on (NVIDIA/gpu-operator#704). A device-plugin config that sets `flags.migStrategy` is checked even
when no MIG pool uses it. A cluster whose strategy is `none` is MIG006's.

## Bad example
```yaml
# policies/gpu-operator/values.yaml
mig:
  strategy: mixed
# pools/a100-mig/pool.yaml
spec:
  mig: {layout: all-1g.10gb, strategy: single}
```

## Fix
Use one strategy everywhere: the fleet uses `mixed` in the GPU Operator values, every device-plugin config and
every MIG pool's pool.yaml.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import plugin_config_location
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet
from .mig_common import cluster_strategy, effective_strategy, mig_pools, plugin_strategy, pool_location

ID = "MIG008"
SEVERITY = Severity.ERROR
SUMMARY = "MIG strategy differs between pool.yaml, ClusterPolicy and device-plugin config"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        if cluster.cluster_policy is None:
            continue  # no GPU Operator configuration at all: MIG006
        yield from _plugin_configs(fleet, cluster)
        yield from _pools(fleet, cluster)


def _plugin_configs(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    operator = cluster_strategy(fleet, cluster)
    if operator.value is None:
        return
    for key, entry in sorted(cluster.device_plugin_configs.items()):
        flag = plugin_strategy(entry)
        if flag and flag != operator.value:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"device-plugin config {key} sets flags.migStrategy {flag}, but the GPU Operator "
                f"runs {operator.value} ({operator.origin})",
                hint=f"set flags.migStrategy: {operator.value}, or change mig.strategy in the GPU Operator "
                "values",
                **at(plugin_config_location(fleet, entry, "flags", "migStrategy")),
            )


def _pools(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    for pool in mig_pools(cluster):
        if not pool.mig_strategy:
            continue
        runs = effective_strategy(fleet, cluster, pool)
        if runs.value != pool.mig_strategy and runs.value != "none":  # none: no MIG at all, MIG006
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"pool {pool.name} declares mig.strategy {pool.mig_strategy}, but its nodes run "
                f"{runs.value} ({runs.origin}); its capacity is computed for the wrong resource "
                "names",
                hint="declare the strategy the cluster runs, or change the cluster's mig.strategy",
                **at(pool_location(fleet, pool, "mig", "strategy")),
            )
