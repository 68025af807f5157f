"""A cluster's pools declare more nodes than one Kubernetes cluster supports.

## Why it matters
Kubernetes is tested and supported up to 5000 nodes per cluster (kubernetes/community,
sig-scalability/configs-and-limits/thresholds.md). pool.yaml bounds each zone of each pool, but only the sum
over the pools a cluster includes says whether the cluster itself is possible. A fleet that declares more is a
typo (an extra digit) or a cluster that will not work; capacity numbers built on it are fiction, and the
simulator would size its node bookkeeping by it.

## Bad example
```yaml
# pools/us-h100-train/pool.yaml and pools/us-h100-serving/pool.yaml, both in clusters/prod-us:
spec:
  zones: {us-west-2a: 3000, us-west-2b: 3000}
```

## Fix
Correct the node counts, or split the nodes between clusters.
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..infra.limits import MAX_NODES_PER_CLUSTER
from ..model import Fleet

ID = "POOL004"
SEVERITY = Severity.ERROR
SUMMARY = "A cluster's pools declare more nodes than Kubernetes supports in one cluster"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        total = sum(pool.nodes for pool in cluster.pools)
        if total <= MAX_NODES_PER_CLUSTER:
            continue
        largest = max(cluster.pools, key=lambda pool: (pool.nodes, pool.name))
        sizes = ", ".join(
            f"{pool.name} {pool.nodes}" for pool in sorted(cluster.pools, key=lambda p: -p.nodes)[:5]
        )
        yield Finding(
            ID,
            SEVERITY,
            f"cluster {cluster.name} declares {total} nodes in its pools ({sizes}); "
            f"Kubernetes supports at most {MAX_NODES_PER_CLUSTER} nodes per cluster",
            cluster=cluster.name,
            hint="correct the node counts in pool.yaml, or split the cluster",
            **at(fleet.locate_file(largest.path, "spec", "zones")),
        )
