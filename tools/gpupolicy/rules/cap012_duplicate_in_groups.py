"""A resource or a flavor appears in two resource groups of the same ClusterQueue or Cohort.

## Why it matters
Kueue's webhook rejects a resource covered by two resource groups, and a flavor used in two groups: the
ClusterQueue fails to apply and the sync stops. Resource groups exist to say "these resources come together
from one flavor"; a resource in two of them has no single answer.

## Bad example
```yaml
resourceGroups:
- coveredResources: [nvidia.com/gpu]
  flavors: [{name: prod-h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
- coveredResources: [nvidia.com/gpu]
  flavors: [{name: prod-a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
```

## Fix
Put every flavor that provides a resource in the one group that covers it (flavors are tried in order).
"""

from collections.abc import Iterator

from ..domain.queues import group_owners
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP012"
SEVERITY = Severity.ERROR
SUMMARY = "Resource or flavor in two resource groups"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for kind, owner, obj, groups in group_owners(cluster):
            seen_resources: dict[str, int] = {}
            seen_flavors: dict[str, int] = {}
            for g, group in enumerate(groups):
                for r, resource in enumerate(group.covered_resources):
                    first = seen_resources.setdefault(resource, g)
                    if first != g:
                        yield _finding(
                            fleet,
                            cluster.name,
                            kind,
                            owner,
                            "resource",
                            resource,
                            first,
                            g,
                            fleet.locate(obj, "spec", "resourceGroups", g, "coveredResources", r),
                        )
                for f, flavor in enumerate(group.flavors):
                    first = seen_flavors.setdefault(flavor.flavor, g)
                    if first != g:
                        yield _finding(
                            fleet,
                            cluster.name,
                            kind,
                            owner,
                            "flavor",
                            flavor.flavor,
                            first,
                            g,
                            fleet.locate(obj, "spec", "resourceGroups", g, "flavors", f, "name"),
                        )


def _finding(
    fleet: Fleet, cluster: str, kind: str, owner: str, what: str, name: str, first: int, again: int, location
) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster,
        message=f"{kind} {owner}: {what} {name} is in resource group {first + 1} and again in "
        f"group {again + 1}; Kueue rejects the object",
        hint=f"keep {name} in one resource group",
        **at(location),
    )
