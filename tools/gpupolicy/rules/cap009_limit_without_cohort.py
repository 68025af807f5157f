"""borrowingLimit or lendingLimit is set where there is nobody to borrow from or lend to.

## Why it matters
A ClusterQueue without `cohortName` (or a Cohort without `parentName`) has no one to borrow from or lend to.
Kueue's webhook rejects such limits, so the object fails to apply and the whole GitOps sync stops; if the
webhook is down, the limit is silently meaningless.

## Bad example
```yaml
kind: ClusterQueue
metadata: {name: alpha}
spec:                       # no cohortName
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: mini-a100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}
```

## Fix
Join a cohort (`cohortName`, or `parentName` for a Cohort), or remove the limit.
"""

from collections.abc import Iterator

from ..domain.quantity import number
from ..domain.quotas import QuotaEntry, quota_entries
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP009"
SEVERITY = Severity.ERROR
SUMMARY = "borrowingLimit or lendingLimit without a cohort"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in quota_entries(cluster):
            if _has_cohort(cluster, entry):
                continue
            for field, value in (
                ("borrowingLimit", entry.quota.borrowing_limit),
                ("lendingLimit", entry.quota.lending_limit),
            ):
                if value is None:
                    continue
                missing = "cohortName" if entry.kind == "ClusterQueue" else "parentName"
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{entry.kind} {entry.owner} sets {field} {number(value)} for "
                    f"{entry.quota.name} on flavor {entry.flavor} but has no {missing}; "
                    "Kueue "
                    "rejects the object",
                    hint=f"set {missing}, or remove {field}",
                    **at(entry.locate(fleet, field)),
                )


def _has_cohort(cluster, entry: QuotaEntry) -> bool:
    if entry.kind == "ClusterQueue":
        return bool(cluster.cluster_queues[entry.owner].cohort)
    return bool(cluster.cohorts[entry.owner].parent)
