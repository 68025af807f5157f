"""A GPU ResourceFlavor's nodeLabels select no pool, or more than one.

## Why it matters
A ResourceFlavor is how Kueue turns quota into placement: its `nodeLabels` become the pods' node selector. A
GPU flavor must select exactly the nodes of one pool as `pool.yaml` declares them. Selecting no pool (a typo
in `gpupolicy.io/pool`, a pool not included in this cluster) leaves admitted pods unschedulable; selecting
several pools (only `nvidia.com/gpu.product`) makes capacity unknowable and lets pods land on another team's
nodes.

## Bad example
```yaml
kind: ResourceFlavor
metadata: {name: prod-h100}
spec:
  nodeLabels:
    gpupolicy.io/pool: prod-h10   # no such pool
```

## Fix
Set `nodeLabels` to a subset of the labels in the pool's `pool.yaml` `nodeLabels` that no other pool shares
(normally `gpupolicy.io/pool: <pool>`), and include the pool's component in the cluster's overlay. A flavor
counts as a GPU flavor when it carries `gpupolicy.io/pool` or a queue gives it an `nvidia.com/` quota, unless
it is labelled `gpupolicy.io/node-class: cpu`: the flavor of the cluster's CPU nodes selects no pool on
purpose (decision 0029), and WL013 checks that it stays away from GPUs.
"""

from collections.abc import Iterator

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import quota_entries
from ..findings import Finding, Severity, at
from ..model import POOL_LABEL, Cluster, Flavor, Fleet

ID = "CAP003"
SEVERITY = Severity.ERROR
SUMMARY = "GPU flavor selects no pool or several pools"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        gpu_flavors = _gpu_flavors(cluster)
        for name in sorted(gpu_flavors):
            flavor = cluster.flavors[name]
            pools = cluster.pools_of_flavor(flavor)
            if len(pools) == 1 or (
                not pools and str(flavor.node_labels.get(POOL_LABEL)) in fleet.invalid_pools
            ):
                continue  # one pool; or the pool's own pool.yaml is broken, which is reported already
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=_message(cluster, flavor, pools),
                hint="make the flavor's nodeLabels match one pool's pool.yaml nodeLabels "
                f"(e.g. {POOL_LABEL}: <pool>)",
                **at(fleet.locate(flavor.obj, "spec", "nodeLabels")),
            )


def _gpu_flavors(cluster: Cluster) -> set[str]:
    named = {name for name, f in cluster.flavors.items() if POOL_LABEL in f.node_labels}
    quoted = {e.flavor for e in quota_entries(cluster) if is_nvidia_resource(e.quota.name)}
    return {name for name in named | (quoted & set(cluster.flavors)) if not cluster.flavors[name].is_cpu}


def _message(cluster: Cluster, flavor: Flavor, pools: list) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in sorted(flavor.node_labels.items())) or "none"
    if pools:
        return (
            f"ResourceFlavor {flavor.name} (nodeLabels {labels}) selects {len(pools)} pools "
            f"({', '.join(p.name for p in pools)}); a GPU flavor must select exactly one"
        )
    if not flavor.node_labels:
        return (
            f"GPU ResourceFlavor {flavor.name} has no nodeLabels: it places pods on any node, not on one pool"
        )
    in_cluster = ", ".join(p.name for p in cluster.pools) or "none"
    return (
        f"ResourceFlavor {flavor.name} (nodeLabels {labels}) selects no pool of this cluster "
        f"(pools: {in_cluster}); admitted pods cannot be scheduled"
    )
