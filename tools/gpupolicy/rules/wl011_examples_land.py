"""An example workload does not land where the policy intends on a cluster that has its namespace.

## Why it matters
Teams copy the examples under `docs/examples/`. Each is traced through the workload path (`gpupolicy explain`
shows the same steps): admission, LimitRange defaulting, the namespace ResourceQuota, Kueue's LocalQueue,
ClusterQueue and flavor assignment, admission of the pods Kueue starts, node fit in the chosen pool, the GPU
Operator components on that pool and the container runtime. An example that is blocked at any step, or whose
CPU-only pods can run on GPU nodes, teaches a manifest that hangs in Pending or is refused, with an error far
from its cause. An example whose namespace no cluster has lands nowhere at all (a fork that renamed its teams
keeps the reference teams' examples): it is reported too.

## Bad example
```yaml
# docs/examples/training-job.yaml: asks for 9 GPUs per pod; every pool has 8 per node
resources:
  limits: {nvidia.com/gpu: 9}
```
```text
docs/examples/training-job.yaml on prod-us: blocked at node fit: us-h100-train: the pod requests 9
nvidia.com/gpu, a node has 8
```

## Fix
Run `gpupolicy explain docs/examples/<file> --cluster <name>`: it prints every step and the file:line of the
object that blocks. Fix the example, or the policy object named, whichever is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import workpath
from ..domain.workloads import workloads
from ..findings import Finding, Location, Severity, at
from ..model import Fleet

ID = "WL011"
SEVERITY = Severity.ERROR
SUMMARY = "An example workload does not land where the policy intends"


def check(fleet: Fleet) -> Iterator[Finding]:
    for example in (w for w in workloads(fleet) if w.cluster is None):
        yield from _namespace_nowhere(fleet, example)
        for cluster in fleet.clusters.values():
            if example.namespace not in cluster.namespaces or workpath.incomplete(fleet, cluster):
                continue
            path = workpath.trace(fleet, cluster, example.body, workpath.example_locator(example.document))
            problem, _where = workpath.misplaced(path)
            if not problem:
                continue
            # the example's line when the example must change (the queue or policy as related), else the
            # fleet's
            place, related = workpath.blame(
                path, Location(example.path, example.document.line_of(("metadata", "name")))
            )
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"{example.path} ({example.ref()}) on {cluster.name}: {problem}",
                hint=f"gpupolicy explain {example.path} --cluster {cluster.name} shows every step",
                related=related,
                **at(place),
            )


def _namespace_nowhere(fleet: Fleet, example) -> Iterator[Finding]:
    """An example in a namespace no cluster has lands nowhere: every cluster's trace would stop at the
    namespace (`explain` says so), and a fork that renamed its teams would keep examples of teams it does not
    have.
    Reported only when every cluster is loaded (not under --cluster or a shard)."""
    clusters = fleet.clusters.values()
    if not clusters or set(fleet.repository_clusters) - set(fleet.clusters):
        return
    if any(workpath.incomplete(fleet, c) for c in clusters) or any(
        example.namespace in c.namespaces for c in clusters
    ):
        return
    teams = sorted({ns.name for c in clusters for ns in c.namespaces.values() if ns.team})
    yield Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{example.path} ({example.ref()}): namespace "
        f"{example.namespace} exists in no cluster, so the example lands nowhere",
        hint=f"put it in a team's namespace ({', '.join(teams) or 'none'}), or delete it",
        path=example.path,
        line=example.document.line_of(("metadata", "namespace")),
    )
