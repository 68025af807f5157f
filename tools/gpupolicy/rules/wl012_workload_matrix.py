"""A team's usual workload does not land where the policy intends (the team x workload matrix).

## Why it matters
For every team namespace of every cluster the toolkit traces six workloads a team runs every day through the
workload path: a training Job (one whole GPU), a MIG inference Deployment (one slice of the profile the team
is offered most of), a time-sliced notebook StatefulSet, a CPU-only Job, a Job with an init container and a
sidecar, and a distributed JobSet whose launcher requests no GPU. Each must land: blocked nowhere when the
team's ClusterQueue offers the GPU resource it asks for, and every pod set without a GPU request on CPU nodes.
A workload whose resource the team is not offered is expected to stay out and is not reported.

The cases are small on purpose, so quota size is never the reason one fails (WL006 and the CAP rules measure
size): a failure here is a broken chain — a flavor order that hands CPU-only pods a GPU flavor, a LimitRange
that gives a sidecar GPUs, a taint nothing tolerates, a queue that selects no namespace. Cases that fail for
the same reason at the same place are reported once, listing them.

## Bad example
```yaml
# clusters/prod-us/queues/nlp.yaml: cpu/memory quota exists only on GPU flavors
resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
      - name: us-h100-train   # a CPU-only launcher gets this flavor, its GPU toleration and node labels,
                              # and admission then denies its pods: the JobSet never starts
```

## Fix
Follow the step the message names (`gpupolicy explain` prints them all). For CPU-only pod sets, list the CPU
flavor (`gpupolicy.io/node-class: cpu`, decision 0029) first in the resource group.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from ..workpath import matrix

ID = "WL012"
SEVERITY = Severity.ERROR
SUMMARY = "A team's usual workload does not land where the policy intends"


def check(fleet: Fleet) -> Iterator[Finding]:
    groups: dict[tuple, list[matrix.Case]] = {}
    for case in matrix.cases(fleet):
        if case.problem:
            stage = case.path.blocked.stage if case.path and case.path.blocked else "node fit"
            groups.setdefault((case.cluster, case.where, stage), []).append(case)
    for (cluster, where, _stage), found in groups.items():
        first = found[0]
        affected = ", ".join(f"{c.team} {c.kind}" for c in found)
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster,
            message=f"{len(found)} matrix case(s) on {cluster} do not land where the policy "
            f"intends ({affected}); {first.team} {first.kind}: {first.problem}",
            hint="gpupolicy explain shows each step; the docs' workload matrix page lists every case",
            **at(where),
        )
