"""A team ClusterQueue can preempt the workloads of a production queue in its cohort.

## Why it matters
Kueue lets a pending workload evict workloads of other ClusterQueues in the same cohort tree:
`reclaimWithinCohort` reclaims quota from queues that borrow (`Any` evicts them whatever their priority,
`LowerPriority` only those of lower priority), and `borrowWithinCohort: {policy: LowerPriority}` preempts
lower priority workloads (up to `maxPriorityThreshold`) to borrow. Production inference that borrowed during a
spike is then evicted by a training or batch queue: a serving outage caused by a quota setting. The check
assumes a queue's workloads use priority classes of the queue's own `gpupolicy.io/tier` (all classes when the
queue has no tier); `withinClusterQueue` only acts inside one queue and is harmless here.

## Bad example
```yaml
kind: ClusterQueue
metadata:
  name: team-a-training
  labels: {gpupolicy.io/tier: training}
spec:
  cohortName: shared-a100       # production-inference is in this cohort too
  preemption:
    reclaimWithinCohort: Any
```

## Fix
Use `reclaimWithinCohort: LowerPriority` (with the ladder intact, production always outranks the team's
classes) or `Never`, and set `borrowWithinCohort.maxPriorityThreshold` below the lowest production value.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Cluster, ClusterQueue, Fleet
from .prio_common import classes_of

ID = "PRIO006"
SEVERITY = Severity.ERROR
SUMMARY = "No team queue can preempt a production queue's workloads"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        production = [cq for cq in cluster.cluster_queues.values() if cq.tier == "production" and cq.cohort]
        if not production:
            continue
        lowest_production = _lowest_production_value(cluster)
        for cq in cluster.cluster_queues.values():
            if cq.tier == "production" or not cq.cohort:
                continue
            victims = [p.name for p in production if _root(cluster, p.cohort) == _root(cluster, cq.cohort)]
            if victims:
                yield from _threats(fleet, cluster, cq, victims, lowest_production)


def _threats(
    fleet: Fleet, cluster: Cluster, cq: ClusterQueue, victims: list[str], lowest_production: int | None
) -> Iterator[Finding]:
    preemption = cq.preemption
    top = _highest_value(cluster, cq.tier)
    outranks = top is not None and lowest_production is not None and top > lowest_production
    prio_note = (
        f"its highest priority {top} is above the lowest production priority {lowest_production}"
        if outranks
        else ""
    )
    reclaim = preemption.get("reclaimWithinCohort", "Never")
    names = ", ".join(victims)
    if reclaim == "Any" or (reclaim == "LowerPriority" and outranks):
        why = "evicts borrowing workloads whatever their priority" if reclaim == "Any" else prio_note
        yield _finding(
            fleet,
            cluster,
            cq,
            ("spec", "preemption", "reclaimWithinCohort"),
            f"ClusterQueue {cq.name} ({cq.tier or 'no tier'}) has reclaimWithinCohort: {reclaim} "
            f"in the cohort of production queue(s) {names}: it {why}",
        )
    borrow = preemption.get("borrowWithinCohort") or {}
    if isinstance(borrow, dict) and borrow.get("policy") == "LowerPriority" and outranks:
        threshold = borrow.get("maxPriorityThreshold")
        if threshold is None or (isinstance(threshold, int) and threshold >= lowest_production):
            limit = "no maxPriorityThreshold" if threshold is None else f"maxPriorityThreshold {threshold}"
            yield _finding(
                fleet,
                cluster,
                cq,
                ("spec", "preemption", "borrowWithinCohort"),
                f"ClusterQueue {cq.name} ({cq.tier or 'no tier'}) has borrowWithinCohort "
                f"LowerPriority with {limit} in the cohort of production queue(s) {names}; {prio_note}",
            )


def _finding(fleet: Fleet, cluster: Cluster, cq: ClusterQueue, path: tuple, message: str) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=message,
        hint="use reclaimWithinCohort LowerPriority/Never and a maxPriorityThreshold below production",
        **at(fleet.locate(cq.obj, *path)),
    )


def _root(cluster: Cluster, cohort: str) -> str:
    seen = set()
    while cohort in cluster.cohorts and cluster.cohorts[cohort].parent and cohort not in seen:
        seen.add(cohort)
        cohort = cluster.cohorts[cohort].parent
    return cohort


def _highest_value(cluster: Cluster, tier: str) -> int | None:
    values = [
        c.value
        for _kind, classes in classes_of(cluster)
        for c in classes
        if c.tier == tier or (not tier and c.tier != "production")
    ]
    return max(values) if values else None


def _lowest_production_value(cluster: Cluster) -> int | None:
    values = [c.value for _kind, classes in classes_of(cluster) for c in classes if c.tier == "production"]
    return min(values) if values else None
