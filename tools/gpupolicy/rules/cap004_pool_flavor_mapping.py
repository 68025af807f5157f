"""A pool has no ResourceFlavor, or several flavors select the same pool.

## Why it matters
A pool no flavor selects is hardware no queue can use: paid-for GPUs that sit idle. Two flavors on one pool
split its nodes between two quota accounts that both believe they own all of them: Kueue admits against both
and the pods compete for the same devices.

## Bad example
```yaml
kind: ResourceFlavor
metadata: {name: h100-a}
spec: {nodeLabels: {gpupolicy.io/pool: prod-h100}}
---
kind: ResourceFlavor
metadata: {name: h100-b}
spec: {nodeLabels: {gpupolicy.io/pool: prod-h100}}
```

## Fix
Give every pool exactly one flavor (its component's `flavor.yaml`); express different access to the same nodes
through queues, not through a second flavor. Remove a pool's component from clusters that do not use it.
"""

from collections import defaultdict
from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP004"
SEVERITY = Severity.ERROR
SUMMARY = "Pool without a flavor, or selected by several flavors"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        flavors_of: dict[str, list[str]] = defaultdict(list)
        for name, flavor in sorted(cluster.flavors.items()):
            for pool in cluster.pools_of_flavor(flavor):
                flavors_of[pool.name].append(name)
        for pool in cluster.pools:
            flavors = flavors_of.get(pool.name, [])
            where = at(fleet.locate_file(pool.path, "spec", "nodeLabels"))
            if not flavors:
                yield Finding(
                    rule=ID,
                    severity=Severity.WARNING,
                    cluster=cluster.name,
                    message=f"pool {pool.name} ({pool.gpus} {pool.gpu_model} GPUs) is selected by "
                    "no "
                    "ResourceFlavor: no queue can use it",
                    hint=f"add a ResourceFlavor with nodeLabels selecting {pool.name}, or remove "
                    "the "
                    "pool's component from this cluster",
                    **where,
                )
            elif len(flavors) > 1:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"pool {pool.name} is selected by {len(flavors)} ResourceFlavors "
                    f"({', '.join(flavors)}): its capacity is promised twice",
                    hint="keep one flavor per pool",
                    **where,
                )
