"""A ClusterQueue has no namespaceSelector, so it admits nothing.

## Why it matters
In Kueue a missing `namespaceSelector` means "no namespace", not "every namespace" (that is `{}`). The queue
applies cleanly, shows its quota, and silently never admits a single workload.

## Bad example
```yaml
kind: ClusterQueue
metadata: {name: alpha}
spec:
  resourceGroups: [...]   # no namespaceSelector
```

## Fix
Select the team's namespaces: `namespaceSelector: {matchLabels: {gpupolicy.io/team: <team>}}`.
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "CAP013"
SEVERITY = Severity.ERROR
SUMMARY = "ClusterQueue without namespaceSelector admits nothing"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for name, queue in sorted(cluster.cluster_queues.items()):
            if queue.namespace_selector is not None:
                continue
            team = (
                f"{{matchLabels: {{gpupolicy.io/team: {queue.team}}}}}"
                if queue.team
                else "{matchLabels: ...}"
            )
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"ClusterQueue {name} has no namespaceSelector: Kueue admits no workload "
                "from "
                "any namespace into it",
                hint=f"add namespaceSelector: {team} (use {{}} only to admit every namespace)",
                **at(fleet.locate(queue.obj, "spec")),
            )
