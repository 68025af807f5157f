"""A namespace's ResourceQuota on GPUs is smaller than what its queues can admit, or missing.

## Why it matters
Kueue admits a workload against the ClusterQueue's quota (nominal plus what it may borrow); the pods are then
created in the team's namespace, where the core `ResourceQuota` has the last word. If
`requests.nvidia.com/gpu` (or `requests.nvidia.com/mig-<profile>`) there is smaller, the admitted job's pods
are rejected at creation: Kueue shows the job as admitted, holding quota, while nothing runs. Without any GPU
ResourceQuota, pods that bypass Kueue (no queue label) take GPUs that Kueue believes are free.

What a namespace can be admitted is the sum over the ClusterQueues selecting it of nominal quota plus
borrowing: the `borrowingLimit`, or when unlimited everything the rest of the cohort tree can lend (other
queues' nominal, capped by their `lendingLimit`, plus the cohorts' own quota).

## Bad example
```yaml
kind: ResourceQuota
metadata: {name: gpu, namespace: alpha}
spec:
  hard:
    requests.nvidia.com/gpu: "8"   # ClusterQueue alpha has nominalQuota 16
```

## Fix
Set the namespace's `requests.<resource>` at least to what its queues can admit, as reported.
"""

from collections.abc import Iterator
from decimal import Decimal

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quantity import QuantityError, number, parse_quantity
from ..domain.queues import namespace_labels, queues_selecting
from ..domain.quotas import admissible
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, Namespace, NamespaceQuota

ID = "CAP015"
SEVERITY = Severity.ERROR
SUMMARY = "Namespace GPU ResourceQuota smaller than its queues admit, or missing"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for _, namespace in sorted(cluster.namespaces.items()):
            yield from _check_namespace(fleet, cluster, namespace)


def _check_namespace(fleet: Fleet, cluster: Cluster, namespace: Namespace) -> Iterator[Finding]:
    queues = queues_selecting(cluster, namespace_labels(cluster, namespace.name) or {})
    demand: dict[str, float] = {}
    by_queue: dict[str, list[str]] = {}
    for queue in queues:
        for resource, amount in admissible(cluster, queue).items():
            if is_nvidia_resource(resource) and amount > 0:
                demand[resource] = demand.get(resource, 0) + amount
                by_queue.setdefault(resource, []).append(f"{queue.name} {number(amount)}")
    quotas = [q for q in cluster.namespace_quotas if q.namespace == namespace.name]
    for resource, amount in sorted(demand.items()):
        key = f"requests.{resource}"
        limits = [(hard, quota) for quota in quotas if (hard := _hard(quota, key)) is not None]
        admitted = f"{number(amount)} ({', '.join(by_queue[resource])})"
        if not limits:
            if namespace.team:
                yield Finding(
                    rule=ID,
                    severity=Severity.WARNING,
                    cluster=cluster.name,
                    message=f"team namespace {namespace.name} has no ResourceQuota on {key}; its "
                    f"queues admit {admitted}, and pods that bypass Kueue are not limited",
                    hint=f"add a ResourceQuota with {key}: \"{number(amount)}\"",
                    **at(fleet.locate(namespace.obj, "metadata", "name")),
                )
            continue
        hard, quota = min(limits, key=lambda item: item[0])
        if hard < amount:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"ResourceQuota {namespace.name}/{quota.name} allows {key} {number(hard)} "
                f"but the ClusterQueues selecting the namespace can admit {admitted}: admitted "
                "jobs' pods would be rejected",
                hint=f"raise {key} to at least {number(amount)}, or lower the queues' quota/borrowing",
                **at(fleet.locate(quota.obj, "spec", "hard", key)),
            )


def _hard(quota: NamespaceQuota, key: str) -> Decimal | None:
    if key not in quota.hard:
        return None
    try:
        return parse_quantity(quota.hard[key])  # a Decimal: exact, and no OverflowError on 1e400
    except QuantityError:
        return None  # the schema stage reports a malformed quantity
