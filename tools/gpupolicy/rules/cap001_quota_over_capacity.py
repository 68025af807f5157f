"""The nominal quota given out on a pool is more than the pool has.

## Why it matters
Kueue does not know how many GPUs exist: it admits workloads as long as they fit in the quota. When the
ClusterQueues (and Cohorts) together guarantee more GPUs than the pool's nodes expose, the "guaranteed" quota
is fiction: workloads are admitted and then sit Pending on nodes that are full, or preempt each other in a
loop. What a pool exposes comes from `pool.yaml`: GPUs for an exclusive pool, GPUs x replicas when
time-sliced, per-profile MIG instances x nodes for MIG.

## Bad example
```yaml
# pools/prod-h100/pool.yaml: 8 nodes x 8 GPUs = 64 nvidia.com/gpu
kind: ClusterQueue
metadata: {name: nlp}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: prod-h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 48   # vision has 24 and research 8 more on the same pool: 80 > 64
```

## Fix
Lower the nominal quotas so that they sum to at most what the pool exposes (let teams borrow the rest through
their cohort), or add nodes to the pool in `pool.yaml`.
"""

from collections.abc import Iterator

from ..domain.quantity import number
from ..domain.quotas import QuotaEntry, nominal_per_pool, pool_of
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP001"
SEVERITY = Severity.ERROR
SUMMARY = "Nominal quota on a pool exceeds what the pool exposes"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for (_, resource), entries in nominal_per_pool(cluster).items():
            pool = pool_of(cluster, entries[0].flavor)
            exposed = pool.capacity[resource]
            total = sum(e.quota.nominal for e in entries)
            if total > exposed:
                yield _finding(fleet, cluster.name, pool, resource, entries, total, exposed)


def _finding(
    fleet: Fleet, cluster: str, pool, resource: str, entries: list[QuotaEntry], total: float, exposed: int
) -> Finding:
    contributors = [e for e in entries if e.quota.nominal > 0]
    largest = max(contributors, key=lambda e: e.quota.nominal)
    flavors = sorted({e.flavor for e in entries})
    parts = ", ".join(_part(e, len(flavors) > 1) for e in sorted(contributors, key=_by_size))
    message = (
        f"nominal quota for {resource} on pool {pool.name} (flavor {', '.join(flavors)}) sums to "
        f"{number(total)} across {len(contributors)} queue(s) ({parts}) but the pool exposes "
        f"{exposed} ({_hardware(pool)})"
    )
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=message,
        cluster=cluster,
        hint=f"lower the nominal quotas by {number(total - exposed)} in total, or add nodes to {pool.path}",
        **at(largest.locate(fleet, "nominalQuota")),
    )


def _part(entry: QuotaEntry, name_flavor: bool) -> str:
    where = f" on {entry.flavor}" if name_flavor else ""
    return f"{entry.label}{where} {number(entry.quota.nominal)}"


def _by_size(entry: QuotaEntry) -> tuple:
    return (-entry.quota.nominal, entry.label)


def _hardware(pool) -> str:
    shape = f"{pool.nodes} nodes x {pool.gpus_per_node} {pool.gpu_model}"
    if pool.mig_layout:
        return f"{shape}, MIG layout {pool.mig_layout}"
    replicas = pool.time_slicing_replicas or pool.mps_replicas
    return f"{shape} x {replicas} replicas" if replicas and replicas > 1 else shape
