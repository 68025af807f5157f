"""More than one PriorityClass sets `globalDefault: true`.

## Why it matters
Pods without a `priorityClassName` get the global default. With two defaults the API server picks the one with
the lowest value, and which one that is changes silently when someone edits a value: workloads meant to run as
`batch` suddenly run as `experiment` (or the other way round, and start preempting).

## Bad example
```yaml
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 1000
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: experiment}
value: 100
globalDefault: true
```

## Fix
Keep `globalDefault: true` on exactly one class (usually the lowest non-experiment tier) and remove it
elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "PRIO001"
SEVERITY = Severity.ERROR
SUMMARY = "At most one PriorityClass may be the global default"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        defaults = sorted(
            (pc for pc in cluster.priority_classes.values() if pc.global_default), key=lambda pc: pc.name
        )
        if len(defaults) < 2:
            continue
        names = ", ".join(f"{pc.name} ({pc.value})" for pc in defaults)
        for pc in defaults:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"PriorityClass {pc.name} is one of {len(defaults)} global defaults: {names}",
                hint="keep globalDefault: true on exactly one PriorityClass",
                **at(fleet.locate(pc.obj, "globalDefault")),
            )
