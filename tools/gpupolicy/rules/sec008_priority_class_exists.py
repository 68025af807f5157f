"""A workload names a priority class that does not exist in the cluster.

## Why it matters
A pod whose `priorityClassName` does not exist is rejected by the API server; a Kueue workload whose
`kueue.x-k8s.io/priority-class` label names a missing WorkloadPriorityClass is never admitted. Examples in
`docs/examples/` must use classes that every cluster defines, or teams copy a manifest that fails everywhere.

## Bad example
```yaml
metadata:
  labels:
    kueue.x-k8s.io/priority-class: urgent     # no WorkloadPriorityClass "urgent"
spec:
  priorityClassName: high                       # no PriorityClass "high"
```

## Fix
Use a class of the ladder (`gpupolicy rules` lists PRIO rules; `policies/scheduling` defines the classes), or
add the class there.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.workloads import (
    BUILTIN_PRIORITY_CLASSES,
    WORKLOAD_PRIORITY_LABEL,
    Workload,
    pod_specs,
    workloads,
)
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "SEC008"
SEVERITY = Severity.ERROR
SUMMARY = "priorityClassName and kueue.x-k8s.io/priority-class name existing classes"


def check(fleet: Fleet) -> Iterator[Finding]:
    for workload in workloads(fleet):
        clusters = [workload.cluster] if workload.cluster else list(fleet.clusters.values())
        if not clusters:
            continue
        label = workload.labels.get(WORKLOAD_PRIORITY_LABEL)
        if label:
            missing = [c.name for c in clusters if label not in c.workload_priority_classes]
            if missing:
                yield _finding(
                    fleet,
                    workload,
                    ("metadata", "labels", WORKLOAD_PRIORITY_LABEL),
                    f"{workload.ref()} uses WorkloadPriorityClass {label}, which cluster(s) "
                    f"{', '.join(missing)} do not define",
                    clusters,
                )
        for path, spec, _meta in pod_specs(workload):
            name = spec.get("priorityClassName")
            if not name or name in BUILTIN_PRIORITY_CLASSES:
                continue
            missing = [c.name for c in clusters if name not in c.priority_classes]
            if missing:
                yield _finding(
                    fleet,
                    workload,
                    (*path, "priorityClassName"),
                    f"{workload.ref()} uses PriorityClass {name}, which cluster(s) "
                    f"{', '.join(missing)} "
                    "do not define",
                    clusters,
                )


def _finding(fleet: Fleet, workload: Workload, path: tuple, message: str, clusters: list[Cluster]) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=message,
        cluster=workload.cluster.name if workload.cluster else "",
        hint="use a class the clusters define (see policies/scheduling)",
        **at(workload.locate(fleet, *path)),
    )
