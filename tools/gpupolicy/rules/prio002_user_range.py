"""A PriorityClass uses the system range: a value above 1,000,000,000 or a `system-` name.

## Why it matters
Values above one billion and names starting with `system-` are reserved for Kubernetes' own critical classes
(`system-cluster-critical`, `system-node-critical`). The API server rejects such a user class, so the sync
fails; and a workload that did run with such a priority could evict node agents such as the GPU device plugin.

## Bad example
```yaml
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: system-inference
value: 2000000000
```

## Fix
Rename the class without the `system-` prefix and keep its value at or below 1,000,000,000 (the ladder in this
repository uses values far below that).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "PRIO002"
SEVERITY = Severity.ERROR
SUMMARY = "PriorityClass values and names stay in the user range"

USER_MAX = 1_000_000_000  # kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/
SYSTEM_PREFIX = "system-"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pc in cluster.priority_classes.values():
            if pc.value > USER_MAX:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"PriorityClass {pc.name} has value {pc.value:,}, above the user "
                    f"maximum {USER_MAX:,}",
                    hint="values above one billion are reserved for system classes",
                    **at(fleet.locate(pc.obj, "value")),
                )
            if pc.name.startswith(SYSTEM_PREFIX):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"PriorityClass {pc.name} uses the reserved prefix '{SYSTEM_PREFIX}'",
                    hint="the API server rejects user classes named system-*; rename it",
                    **at(fleet.locate(pc.obj, "metadata", "name")),
                )
