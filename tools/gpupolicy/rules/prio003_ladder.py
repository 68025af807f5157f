"""The priority ladder is broken: a class of a higher tier is not strictly above every class of a lower tier.

## Why it matters
The ladder `production > training > batch > experiment` decides who is preempted when GPUs run out. If a
`batch` class has a higher value than a `training` class, a nightly batch sweep evicts a multi-day training
run; if a `training` class reaches a `production` value, training can preempt inference serving. The ladder
must hold separately for `PriorityClass` (pods) and `WorkloadPriorityClass` (Kueue workloads), the tier being
the `gpupolicy.io/tier` label of the class.

## Bad example
```yaml
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: batch-urgent
  labels: {gpupolicy.io/tier: batch}
value: 5000            # above training-default (3000)
```

## Fix
Give every class of a tier a value strictly between the lowest class of the tier above and the highest class
of the tier below, or move the class to the tier it really belongs to.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .prio_common import classes_of, tier_rank

ID = "PRIO003"
SEVERITY = Severity.ERROR
SUMMARY = "Priority values follow the tier ladder production > training > batch > experiment"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for kind, classes in classes_of(cluster):
            ranked = [cls for cls in classes if tier_rank(cls.tier) >= 0]
            for lower in ranked:
                above = [
                    c for c in ranked if tier_rank(c.tier) < tier_rank(lower.tier) and c.value <= lower.value
                ]
                if not above:
                    continue
                worst = min(above, key=lambda c: (c.value, c.name))
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{kind} {lower.name} ({lower.tier}, {lower.value}) is not below "
                    f"{worst.name} ({worst.tier}, {worst.value})"
                    + (f" and {len(above) - 1} more higher-tier class(es)" if len(above) > 1 else ""),
                    hint=f"every {lower.tier} class must have a lower value than every class of a "
                    "higher "
                    "tier",
                    **at(fleet.locate(lower.obj, "value")),
                )
