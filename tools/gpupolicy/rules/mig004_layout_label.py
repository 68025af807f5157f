"""A pool's `nvidia.com/mig.config` label names no layout of the cluster, or disagrees with pool.yaml.

## Why it matters
The MIG manager partitions a node by the layout its `nvidia.com/mig.config` label names, looked up in the
mig-parted ConfigMap the ClusterPolicy points at (`migManager.config.name`, key `config.yaml`). A name that is
not there leaves the node in `nvidia.com/mig.config.state=failed`; a missing label leaves it on the default
(`all-disabled`). The toolkit computes the pool's capacity from `spec.mig.layout` in pool.yaml, so when the
label says something else the quotas are checked against slices the nodes never get. A pool without MIG whose
nodes carry a label that does partition its GPUs exposes slices instead of the whole GPUs its flavor promises.

## Bad example
```yaml
# pools/a100-mig/pool.yaml
spec:
  mig:
    layout: all-1g.10gb
    strategy: mixed
  nodeLabels:
    nvidia.com/mig.config: all-1g.10gb.me   # not in policies/gpu-operator/mig-parted-config.yaml
```

## Fix
Set the label to the layout pool.yaml declares, and make sure that layout is in the cluster's mig-parted
config (`policies/gpu-operator/mig-parted-config.yaml`).
"""

from collections.abc import Iterator

from ..domain.mig import per_node_profile_counts
from ..findings import Finding, Severity, at
from ..model import MIG_CONFIG_LABEL, Cluster, Fleet, Pool
from .mig_common import layout_entries, mig_config_label, mig_configmap_name, model_of, pool_location

ID = "MIG004"
SEVERITY = Severity.ERROR
SUMMARY = "nvidia.com/mig.config names no layout of the cluster or disagrees with pool.yaml"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pool in cluster.pools:
            if pool.mig_layout:
                yield from _mig_pool(fleet, cluster, pool)
            elif mig_config_label(pool):
                yield from _whole_gpu_pool(fleet, cluster, pool)


def _finding(fleet: Fleet, cluster: Cluster, pool: Pool, message: str, hint: str, *path: str) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=message,
        hint=hint,
        **at(pool_location(fleet, pool, *path)),
    )


def _mig_pool(fleet: Fleet, cluster: Cluster, pool: Pool) -> Iterator[Finding]:
    label = mig_config_label(pool)
    if label is None:
        yield _finding(
            fleet,
            cluster,
            pool,
            f"pool {pool.name} declares MIG layout {pool.mig_layout} but its nodeLabels have no "
            f"{MIG_CONFIG_LABEL}; the MIG manager leaves its nodes on the default layout",
            f"add {MIG_CONFIG_LABEL}: \"{pool.mig_layout}\" to spec.nodeLabels",
            "nodeLabels",
        )
    elif label != pool.mig_layout:
        yield _finding(
            fleet,
            cluster,
            pool,
            f"pool {pool.name}: node label {MIG_CONFIG_LABEL}={label} disagrees with "
            f"spec.mig.layout {pool.mig_layout}; nodes get {label}, capacity is computed from "
            f"{pool.mig_layout}",
            "make the label and spec.mig.layout name the same layout",
            "nodeLabels",
            MIG_CONFIG_LABEL,
        )
    if pool.mig_layout not in cluster.mig_configs:
        yield _finding(
            fleet,
            cluster,
            pool,
            _missing(cluster, pool, pool.mig_layout or ""),
            _hint(cluster),
            "mig",
            "layout",
        )
    if label and label != pool.mig_layout and label not in cluster.mig_configs:
        yield _finding(
            fleet,
            cluster,
            pool,
            _missing(cluster, pool, label),
            _hint(cluster),
            "nodeLabels",
            MIG_CONFIG_LABEL,
        )


def _whole_gpu_pool(fleet: Fleet, cluster: Cluster, pool: Pool) -> Iterator[Finding]:
    label = mig_config_label(pool) or ""
    path = ("nodeLabels", MIG_CONFIG_LABEL)
    entry = cluster.mig_configs.get(label)
    if entry is None:
        yield _finding(fleet, cluster, pool, _missing(cluster, pool, label), _hint(cluster), *path)
        return
    model = model_of(pool)
    slices = per_node_profile_counts(layout_entries(entry), pool.gpus_per_node, model) if model else {}
    if slices:
        made = ", ".join(f"{count} x {name}" for name, count in sorted(slices.items()))
        yield _finding(
            fleet,
            cluster,
            pool,
            f"pool {pool.name} declares no MIG layout (access mode {pool.access_mode}) but its "
            f"nodes are labelled {MIG_CONFIG_LABEL}={label}, which makes {made} per node",
            "declare the layout in spec.mig, or label the nodes all-disabled",
            *path,
        )


def _missing(cluster: Cluster, pool: Pool, name: str) -> str:
    known = ", ".join(sorted(cluster.mig_configs))
    where = f"ConfigMap gpu-operator/{mig_configmap_name(cluster)} (key config.yaml)"
    if not known:
        return (
            f"pool {pool.name} selects MIG layout {name}, but cluster {cluster.name} renders no layouts "
            f"in {where}"
        )
    return (
        f"pool {pool.name} selects MIG layout {name}, which is not in {where} of cluster {cluster.name} "
        f"(layouts: {known})"
    )


def _hint(cluster: Cluster) -> str:
    return "add the layout to the mig-parted config the cluster renders, or select one of its layouts"
