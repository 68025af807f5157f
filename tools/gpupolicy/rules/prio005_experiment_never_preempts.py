"""An `experiment` PriorityClass may preempt other pods.

## Why it matters
Experiments (notebooks, quick trials) are the lowest tier: they should wait for free GPUs, never take them.
With the default `preemptionPolicy: PreemptLowerPriority` an experiment pod still evicts any pod of lower
priority, for instance an unlabelled pod at priority 0 or another team's experiment with a smaller value, and
the scheduler's preemption churn lands on the busiest GPU nodes.

## Bad example
```yaml
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: experiment
  labels: {gpupolicy.io/tier: experiment}
value: 100
```

## Fix
```yaml
preemptionPolicy: Never
```
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "PRIO005"
SEVERITY = Severity.ERROR
SUMMARY = "Experiment PriorityClasses use preemptionPolicy: Never"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pc in cluster.priority_classes.values():
            if pc.tier != "experiment" or pc.preemption_policy == "Never":
                continue
            explicit = "preemptionPolicy" in pc.obj.body
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"experiment PriorityClass {pc.name} has preemptionPolicy "
                f"{pc.preemption_policy}{'' if explicit else ' (the default)'}",
                hint="set preemptionPolicy: Never on experiment classes",
                **at(fleet.locate(pc.obj, "preemptionPolicy" if explicit else "value")),
            )
