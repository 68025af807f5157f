"""A workload that lands in an empty cluster is refused or stranded once a flavor it gets has no room.

## Why it matters
WL011 and WL012 trace each workload through an empty cluster. A real cluster is full most of the time, and
then Kueue does not wait at the first flavor: when a flavor has no room it tries the next flavor of the same
resource group (kubernetes-sigs/kueue `pkg/scheduler/flavorassigner/flavorassigner.go`, `findFlavorForPodSets`
and `shouldTryNextFlavor`: a flavor that does not fit, or needs preemption under the default `whenCanPreempt:
TryNextFlavor`, sends the search on). That next flavor may be a GPU pool's: a pod set that requests no GPU
fits its 720 cpu, gets its node labels and GPU toleration, and is refused by the admission policy that keeps
pods without a GPU request off GPU nodes, or holds GPU nodes without using them. The workload holds GPU-pool
quota and never runs, as soon as the cluster is busy — issue 33, defect 2.

This rule traces every example under `docs/examples/` (the workloads WL011 traces) and every case of the team
x workload matrix (WL012) again with each flavor it gets filled to the most its queue may use (`explain
--full`), then with the flavors the retrace moved it to filled too, until the workload only waits. A pod set
that only waits (Kueue keeps the workload pending until quota frees or it preempts) is fine; one that is
refused by admission, or left unschedulable, or that requests no GPU and is moved to a GPU pool, is an error
at the workload's line, with the queue's flavor list as the related location.

## Bad example
```yaml
resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
      - name: cpu          # CPU-only pod sets take it first ...
        resources: [{name: cpu, nominalQuota: 32}, ...]
      - name: us-h100-train  # ... and this one when cpu is full: GPU labels and toleration injected
        resources: [{name: cpu, nominalQuota: 720}, ...]
```

## Fix
Cover cpu and memory in a resource group of their own with the `cpu` flavor alone, and the GPU resources in a
second group with the GPU flavors (decision 0069): a CPU-only pod set then has no GPU flavor to move on to,
and a GPU pod set takes cpu/memory from the `cpu` flavor (no node labels, no tolerations) and its GPUs from a
pool's flavor. `gpupolicy explain FILE --full FLAVOR` shows the trace the finding names.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import workpath
from ..domain.workloads import workloads
from ..findings import Finding, Location, Severity, at
from ..model import Cluster, Fleet
from ..workpath import matrix

ID = "WL014"
SEVERITY = Severity.ERROR
SUMMARY = "A workload is refused or stranded when a flavor it gets has no room (the cluster under load)"

MAX_STATES = 32  # flavor sets traced per workload and cluster: a queue has a handful of flavors


def check(fleet: Fleet) -> Iterator[Finding]:
    for example in (w for w in workloads(fleet) if w.cluster is None):
        locate = workpath.example_locator(example.document)
        own_line = Location(example.path, example.document.line_of(("metadata", "name")))
        for cluster in fleet.clusters.values():
            if example.namespace not in cluster.namespaces or workpath.incomplete(fleet, cluster):
                continue
            found = under_load(fleet, cluster, example.body, locate)
            if found:
                full, problem, where = found
                yield _finding(
                    cluster,
                    f"{example.path} ({example.ref()})",
                    full,
                    problem,
                    own_line,
                    where,
                    f"gpupolicy explain {example.path} --cluster {cluster.name} --full {','.join(full)}",
                )
    traced: set[int] = set()
    for case in matrix.cases(fleet):
        if case.path is None or case.problem or case.body is None or id(case.path) in traced:
            continue  # not offered, WL012 reports it already, or a team with the same signature was traced
        traced.add(id(case.path))
        cluster = fleet.clusters[case.cluster]
        found = under_load(fleet, cluster, case.body, lambda _path: None)
        if found:
            full, problem, where = found
            yield _finding(
                cluster,
                f"team {case.team}'s {case.kind}",
                full,
                problem,
                where,
                None,
                f"the workload matrix page lists the case; gpupolicy explain a team's manifest "
                f"with --cluster {cluster.name} --full {','.join(full)} shows every step",
            )


def under_load(
    fleet: Fleet, cluster: Cluster, body: dict, locate: workpath.Locator, namespace: str | None = None
) -> tuple[tuple[str, ...], str, Location | None] | None:
    """The first set of full flavors (in Kueue's walk from the empty cluster) under which the workload is
    misplaced, with the problem and its place; None when it lands or only waits under every one."""
    start = workpath.trace(fleet, cluster, body, locate, namespace)
    if workpath.misplaced(start)[0]:
        return None  # WL011 / WL012 report the empty cluster
    pending = [(frozenset(), start)]
    seen = {frozenset()}
    while pending and len(seen) <= MAX_STATES:
        full, path = pending.pop(0)
        for flavor in _flavors_taken(path):
            more = full | {flavor}
            if more in seen:
                continue
            seen.add(more)
            loaded = workpath.trace(fleet, cluster, body, locate, namespace, more)
            problem, where = workpath.misplaced(loaded)
            if problem:
                return tuple(f for f in _in_order(cluster, more)), problem, where
            pending.append((more, loaded))
    return None


def _flavors_taken(path: workpath.WorkloadPath) -> list[str]:
    return list(dict.fromkeys(f for p in path.pod_sets for f in p.flavors.values()))


def _in_order(cluster: Cluster, flavors: frozenset[str]) -> list[str]:
    return sorted(flavors, key=lambda f: (not cluster.flavors[f].is_cpu if f in cluster.flavors else True, f))


def _finding(
    cluster: Cluster,
    what: str,
    full: tuple[str, ...],
    problem: str,
    place: Location | None,
    related: Location | None,
    hint: str,
) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=f"{what} on {cluster.name}: with flavor {', '.join(full)} full, {problem}",
        hint=hint,
        related=(related,) if related and related != place else (),
        **at(place),
    )
