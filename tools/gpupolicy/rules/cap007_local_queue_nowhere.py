"""A LocalQueue points at a ClusterQueue that does not exist or does not admit its namespace.

## Why it matters
Teams submit to a LocalQueue. If its `clusterQueue` does not exist, or that ClusterQueue's `namespaceSelector`
does not select the LocalQueue's namespace, Kueue keeps every workload pending ("ClusterQueue ... doesn't
exist" / "namespace doesn't match") and nothing fails at sync time.

## Bad example
```yaml
kind: LocalQueue
metadata: {name: training, namespace: alpha}
spec:
  clusterQueue: alpah
```

## Fix
Name an existing ClusterQueue whose `namespaceSelector` matches the namespace's labels
(`gpupolicy.io/team: <team>`).
"""

from collections.abc import Iterator

from ..domain.queues import namespace_labels, selector_matches
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, LocalQueue

ID = "CAP007"
SEVERITY = Severity.ERROR
SUMMARY = "LocalQueue points at a missing ClusterQueue or one that does not admit its namespace"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for local in cluster.local_queues:
            message = _problem(cluster, local)
            if message:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=message,
                    hint="point spec.clusterQueue at a ClusterQueue whose namespaceSelector "
                    "selects "
                    f"namespace {local.namespace}",
                    **at(fleet.locate(local.obj, "spec", "clusterQueue")),
                )


def _problem(cluster: Cluster, local: LocalQueue) -> str:
    where = f"LocalQueue {local.namespace}/{local.name}"
    queue = cluster.cluster_queues.get(local.cluster_queue)
    if queue is None:
        known = ", ".join(sorted(cluster.cluster_queues)) or "none"
        return (
            f"{where} points at ClusterQueue {local.cluster_queue or '(empty)'}, which does not exist "
            f"(ClusterQueues: {known}); its workloads stay pending"
        )
    labels = namespace_labels(cluster, local.namespace)
    if labels is None or queue.namespace_selector is None:
        return ""  # unknown namespace labels; a nil selector is CAP013's finding
    if not selector_matches(queue.namespace_selector, labels):
        return (
            f"{where} points at ClusterQueue {queue.name}, whose namespaceSelector does not select "
            "namespace "
            f"{local.namespace}; its workloads stay pending"
        )
    return ""
