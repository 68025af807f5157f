"""Cohorts form a cycle through their parentName.

## Why it matters
Kueue detects a cohort cycle only at runtime, and then disables every cohort in the cycle and every
ClusterQueue under them until the cycle is removed: all those teams stop admitting work at once.

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
            queues = sorted(
                n for n, cq in cluster.cluster_queues.items() if _reaches(cluster, cq.cohort, cycle)
            )
            field = "parentName" if "parentName" in first.obj.spec else "parent"
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"cohorts form a cycle: {' -> '.join([*cycle, cycle[0]])}; Kueue disables "
                f"them and their ClusterQueues ({', '.join(queues) or 'none'})",
                hint="remove parentName from the cohort that should be the root",
                **at(fleet.locate(first.obj, "spec", field)),
            )


def _reaches(cluster: Cluster, cohort: str, cycle: list[str]) -> bool:
    """Whether a cohort is in the cycle or below it (Kueue disables the whole subtree)."""
    seen: set[str] = set()
    while cohort and cohort not in seen:
        if cohort in cycle:
            return True
        seen.add(cohort)
        cohort = cluster.cohorts[cohort].parent if cohort in cluster.cohorts else ""
    return False


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
            loop = path[path.index(current) :]
            pivot = loop.index(min(loop))
            ordered = loop[pivot:] + loop[:pivot]
            found.setdefault(tuple(ordered), ordered)
    return [loop for loop in found.values() if cluster.cohorts[loop[0]].obj is not None]
