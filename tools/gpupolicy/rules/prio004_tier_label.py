"""A PriorityClass or WorkloadPriorityClass has no valid `gpupolicy.io/tier` label.

## Why it matters
The tier label places a class on the ladder (`production`, `training`, `batch`, `experiment`). A class without
it escapes the ladder check (PRIO003) and the preemption checks (PRIO005, PRIO006): nobody can tell whether
its value is meant to outrank training or not.

## Bad example
```yaml
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: urgent        # which tier?
value: 50000
```

## Fix
Add `gpupolicy.io/tier: production|training|batch|experiment` to the class's labels.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import TIER_LABEL, TIERS, Fleet
from .prio_common import classes_of

ID = "PRIO004"
SEVERITY = Severity.WARNING
SUMMARY = "Every priority class declares its tier"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for kind, classes in classes_of(cluster):
            for cls in classes:
                if cls.tier in TIERS:
                    continue
                problem = f"has tier '{cls.tier}', not one of" if cls.tier else "has no label"
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{kind} {cls.name} {problem} {TIER_LABEL}: {'|'.join(TIERS)}",
                    hint="label the class with its tier so the ladder checks cover it",
                    **at(fleet.locate(cls.obj, "metadata", "labels" if cls.tier else "name")),
                )
