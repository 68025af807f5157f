"""A quota is given on a GPU resource the flavor's pool does not expose.

## Why it matters
A MIG pool in mixed strategy exposes one resource per profile (`nvidia.com/mig-1g.10gb`), not
`nvidia.com/gpu`; an all-1g layout exposes no `nvidia.com/mig-2g.20gb`; a renamed time-sliced pool exposes
`nvidia.com/gpu.shared`. Kueue happily admits a workload against such a quota, and its pods then wait forever
for a device no node advertises.

## Bad example
```yaml
# pools/mig-a100/pool.yaml: layout all-1g.10gb, strategy mixed
flavors:
- name: mig-a100
  resources:
  - name: nvidia.com/mig-2g.20gb
    nominalQuota: 4
```

## Fix
Quote the resource names the pool exposes (`gpupolicy inspect` lists each pool's capacity), or change the
pool's layout. A zero quota (kept for a resource group shared with another flavor) is not reported.
"""

from collections.abc import Iterator

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quantity import number
from ..domain.quotas import capacity_known, pool_of, quota_entries
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP002"
SEVERITY = Severity.ERROR
SUMMARY = "Quota on a GPU resource the flavor's pool does not expose"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in quota_entries(cluster):
            pool = pool_of(cluster, entry.flavor)
            resource = entry.quota.name
            if pool is None or not is_nvidia_resource(resource) or not capacity_known(cluster, pool):
                continue
            if resource in pool.capacity or entry.quota.nominal <= 0:
                continue
            exposed = (
                ", ".join(f"{name} ({count})" for name, count in sorted(pool.capacity.items())) or "nothing"
            )
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"{entry.kind} {entry.owner} gives {number(entry.quota.nominal)} {resource} on "
                f"flavor {entry.flavor}, but pool {pool.name} ({_mode(pool)}) does not expose {resource}; "
                f"it exposes {exposed}",
                hint=f"use a resource the pool exposes, or change the pool in {pool.path}",
                **at(entry.locate(fleet, "name")),
            )


def _mode(pool) -> str:
    if pool.mig_layout:
        return f"MIG layout {pool.mig_layout}, strategy {pool.mig_strategy}"
    if pool.time_slicing_replicas:
        return f"time-sliced x{pool.time_slicing_replicas}" + (
            ", renamed to .shared" if pool.rename_shared else ""
        )
    return pool.sharing
