"""A quota or limit in a ClusterQueue or Cohort is negative.

## Why it matters
Kueue's admission webhook rejects a negative `nominalQuota`, `borrowingLimit` or `lendingLimit`, so the whole
sync of the ClusterQueue fails. The Kubernetes quantity format itself allows a sign, so schemas alone do not
catch it.

## Bad example
```yaml
resources:
  - name: nvidia.com/gpu
    nominalQuota: -8
```

## Fix
Use zero or a positive amount; to take a team off a flavor, set its nominal quota to 0.
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet, K8sObject
from ..quantity import QuantityError, parse_quantity

ID = "CAP016"
SEVERITY = Severity.ERROR
SUMMARY = "A quota or limit is negative"
FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        owners: list[K8sObject] = [q.obj for q in cluster.cluster_queues.values()]
        owners += [c.obj for c in cluster.cohorts.values() if c.obj is not None]
        for obj in owners:
            for path, field, value in _quota_values(obj.spec):
                try:
                    negative = parse_quantity(value) < 0
                except QuantityError:
                    continue  # not a quantity at all: the schema reports it
                if negative:
                    yield Finding(ID, SEVERITY, f"{obj.ref()}: {field} {value} is negative; Kueue rejects it",
                                  cluster=cluster.name, hint="use 0 to give no quota",
                                  **at(fleet.locate(obj, "spec", *path, field)))


def _quota_values(spec: dict) -> Iterator[tuple[tuple, str, object]]:
    for g, group in enumerate(spec.get("resourceGroups") or []):
        for f, flavor in enumerate((group or {}).get("flavors") or [] if isinstance(group, dict) else []):
            for r, resource in enumerate(flavor.get("resources") or [] if isinstance(flavor, dict) else []):
                for field in FIELDS if isinstance(resource, dict) else ():
                    if field in resource:
                        yield ("resourceGroups", g, "flavors", f, "resources", r), field, resource[field]
