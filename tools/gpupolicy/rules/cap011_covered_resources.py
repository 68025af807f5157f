"""A flavor's resources do not match its resource group's coveredResources, in the same order.

## Why it matters
Kueue requires every flavor of a resource group to list exactly the group's `coveredResources`, in the same
order (the CRD checks the count, the webhook the names). A mismatch makes the ClusterQueue fail to apply and
the sync stop; a resource missing from `coveredResources` makes every workload requesting it inadmissible.

## Bad example
```yaml
- coveredResources: [nvidia.com/gpu, cpu]
  flavors:
  - name: prod-h100
    resources:
    - {name: cpu, nominalQuota: 64}
    - {name: nvidia.com/gpu, nominalQuota: 8}
```

## Fix
List each flavor's resources exactly as `coveredResources`, same names, same order (use `nominalQuota: 0` for
a resource the flavor should not provide).
"""

from collections.abc import Iterator

from ..domain.queues import group_owners
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP011"
SEVERITY = Severity.ERROR
SUMMARY = "Flavor resources do not match coveredResources in the same order"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for kind, owner, obj, groups in group_owners(cluster):
            for g, group in enumerate(groups):
                covered = list(group.covered_resources)
                for f, flavor in enumerate(group.flavors):
                    listed = [q.name for q in flavor.resources]
                    if listed == covered:
                        continue
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"{kind} {owner}: flavor {flavor.flavor} lists resources "
                        f"[{', '.join(listed)}] but its resource group covers "
                        f"[{', '.join(covered)}] (same names, same order required)",
                        hint="list exactly the coveredResources, in order; use nominalQuota 0 for "
                        "a resource this flavor should not provide",
                        **at(fleet.locate(obj, "spec", "resourceGroups", g, "flavors", f, "resources")),
                    )
