"""Cohorts form a cycle through their parentName.

## Why it matters
Kueue detects a cohort cycle only at runtime, and then disables every cohort in the cycle and every ClusterQueue
under them until the cycle is removed: all those teams stop admitting work at once.

## Bad example
```yaml
kind: Cohort
metadata: {name: research}
spec: {parentName: org}
---
kind: Cohort
metadata: {name: org}
spec: {parentName: research}
```

## Fix
Make the hierarchy a tree: the root cohort has no `parentName`.
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "CAP008"
SEVERITY = Severity.ERROR
SUMMARY = "Cohort hierarchy has a cycle"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for cycle in cycles(cluster):
            first = cluster.cohorts[cycle[0]]
            queues = sorted(n for n, cq in cluster.cluster_queues.items() if cq.cohort in cycle)
            field = "parentName" if "parentName" in first.obj.spec else "parent"
            yield Finding(rule=ID, severity=SEVERITY, cluster=cluster.name,
                          message=f"cohorts form a cycle: {' -> '.join([*cycle, cycle[0]])}; Kueue disables them "
                                  f"and their ClusterQueues ({', '.join(queues) or 'none'})",
                          hint="remove parentName from the cohort that should be the root",
                          **at(fleet.locate(first.obj, "spec", field)))


def cycles(cluster: Cluster) -> list[list[str]]:
    """Each parent cycle once, starting at its alphabetically first cohort."""
    found: dict[tuple[str, ...], list[str]] = {}
    for start in sorted(cluster.cohorts):
        path: list[str] = []
        current = start
        while current and current in cluster.cohorts and current not in path:
            path.append(current)
            current = cluster.cohorts[current].parent
        if current in path:
            loop = path[path.index(current):]
            pivot = loop.index(min(loop))
            ordered = loop[pivot:] + loop[:pivot]
            found.setdefault(tuple(ordered), ordered)
    return [loop for loop in found.values() if cluster.cohorts[loop[0]].obj is not None]
