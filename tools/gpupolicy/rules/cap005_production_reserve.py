"""Production queues' guaranteed quota does not survive losing a node, or a zone.

## Why it matters
Production inference is promised its nominal quota. Nodes fail and zones go down; when they do, the quota is
still there but the GPUs are not, and production workloads wait behind a quota that no longer exists. The
guaranteed quota of all `gpupolicy.io/tier: production` queues on a pool must fit in what the pool exposes
after losing its largest failure domain: one node, and for a pool spread over several zones, its largest zone.

## Bad example
```yaml
# pools/prod-h100/pool.yaml: zones {eu-1a: 2, eu-1b: 2}, 8 GPUs per node -> 32 GPUs, 16 after losing a zone
kind: ClusterQueue
metadata:
  name: serving
  labels: {gpupolicy.io/tier: production}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: prod-h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 24}
```

## Fix
Keep production nominal quota at or below the degraded capacity (let production borrow the rest from its
cohort), or add nodes (in another zone) to the pool.
"""

from collections.abc import Iterator

from ..domain.quantity import number
from ..domain.quotas import QuotaEntry, production_nominal, surviving_capacity
from ..findings import Finding, Severity, at
from ..model import Fleet, Pool

ID = "CAP005"
SEVERITY = Severity.ERROR
SUMMARY = "Production quota does not survive the loss of a node or a zone"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        pools = {pool.name: pool for pool in cluster.pools}
        for (pool_name, resource), entries in production_nominal(cluster).items():
            finding = _check_pool(fleet, cluster.name, pools[pool_name], resource, entries)
            if finding:
                yield finding


def _check_pool(
    fleet: Fleet, cluster: str, pool: Pool, resource: str, entries: list[QuotaEntry]
) -> Finding | None:
    guaranteed = sum(e.quota.nominal for e in entries)
    what, left = surviving_capacity(pool, resource)
    if guaranteed <= left:
        return None
    largest = max(entries, key=lambda e: (e.quota.nominal, e.owner))
    queues = ", ".join(f"{e.owner} {number(e.quota.nominal)}" for e in sorted(entries, key=lambda e: e.owner))
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster,
        message=f"production nominal quota for {resource} on pool {pool.name} is {number(guaranteed)} "
        f"({queues}) but after losing {what} the pool exposes {left} of {pool.capacity[resource]}",
        hint=f"lower production nominal quota to {left} or less (borrow the rest through the cohort), or add "
        f"nodes to {pool.path}",
        **at(largest.locate(fleet, "nominalQuota")),
    )
