"""A ClusterQueue's lendingLimit is larger than its nominalQuota.

## Why it matters
A queue can only lend what it owns. Kueue's webhook rejects `lendingLimit` > `nominalQuota` on a ClusterQueue,
so the object fails to apply and the sync stops; the intent (lend less than everything) is usually a typo in
one of the two numbers.

## Bad example
```yaml
resources:
- name: nvidia.com/gpu
  nominalQuota: 8
  lendingLimit: 12
```

## Fix
Set `lendingLimit` at or below `nominalQuota` (omit it to lend everything unused).
"""

from collections.abc import Iterator

from ..domain.quantity import number
from ..domain.quotas import quota_entries
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP010"
SEVERITY = Severity.ERROR
SUMMARY = "lendingLimit larger than nominalQuota"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in quota_entries(cluster):
            quota = entry.quota
            if (
                entry.kind != "ClusterQueue"
                or quota.lending_limit is None
                or quota.lending_limit <= quota.nominal
            ):
                continue
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"ClusterQueue {entry.owner} lends up to {number(quota.lending_limit)} "
                f"{quota.name} on flavor {entry.flavor} but its nominalQuota is only "
                f"{number(quota.nominal)}; Kueue rejects the object",
                hint="lower lendingLimit to at most nominalQuota, or omit it",
                **at(entry.locate(fleet, "lendingLimit")),
            )
