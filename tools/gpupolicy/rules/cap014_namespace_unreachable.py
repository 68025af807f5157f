"""A team namespace is selected by no ClusterQueue.

## Why it matters
A namespace labelled `gpupolicy.io/team` exists so that team can run GPU work through Kueue. If no
ClusterQueue's `namespaceSelector` selects it (a label typo, a queue whose selector was narrowed), every job
the team submits there stays suspended, with no error anywhere.

## Bad example
```yaml
kind: Namespace
metadata:
  name: vision
  labels: {gpupolicy.io/team: vision}
# ...while the ClusterQueue selects gpupolicy.io/team: visoin
```

## Fix
Fix the namespace label or the ClusterQueue's `namespaceSelector` (matchLabels and matchExpressions `In`,
`NotIn`, `Exists`, `DoesNotExist` are evaluated as Kubernetes does).
"""

from collections.abc import Iterator

from ..domain.queues import namespace_labels, queues_selecting
from ..findings import Finding, Severity, at
from ..model import TEAM_LABEL, Fleet

ID = "CAP014"
SEVERITY = Severity.WARNING
SUMMARY = "Team namespace selected by no ClusterQueue"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for name, namespace in sorted(cluster.namespaces.items()):
            if not namespace.team:
                continue
            if queues_selecting(cluster, namespace_labels(cluster, name) or {}):
                continue
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"namespace {name} (team {namespace.team}) is selected by no "
                "ClusterQueue's "
                "namespaceSelector: its GPU jobs can never be admitted",
                hint=f"check the {TEAM_LABEL} label here and the team's ClusterQueue namespaceSelector",
                **at(fleet.locate(namespace.obj, "metadata", "labels", TEAM_LABEL)),
            )
