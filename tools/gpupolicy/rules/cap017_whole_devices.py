"""A quantity of GPUs, MIG slices or another extended resource is fractional or has a binary suffix.

## Why it matters
Devices cannot be split: Kubernetes requires every extended resource (a domain-qualified name outside
kubernetes.io, such as `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb` or `nvidia.com/gpu.shared`) to be a whole
number (`IsIntegerResourceName`, checked by `ValidateResourceQuantityValue` in kubernetes/kubernetes
pkg/apis/core/validation/validation.go: "must be an integer"). The API server rejects a container asking for
`0.5` GPUs, but it does not check the same number in a ResourceQuota (`requests.nvidia.com/gpu` is not an
extended resource name) or a LimitRange, and Kueue takes any quantity in a ClusterQueue (its webhook,
kubernetes-sigs/kueue pkg/webhooks/clusterqueue_webhook.go `validateResourceQuantity`, checks only the sign):
a quota of `500m` GPUs admits no GPU at all, and a LimitRange default of `0.5` makes every pod it defaults
fail. A binary suffix is whole but almost never meant: `1Ki` GPUs is 1024 of them, a memory unit written on a
device count.

The rule checks ClusterQueue and Cohort quotas (nominalQuota, borrowingLimit, lendingLimit), ResourceQuota
`hard`, LimitRange `max`/`min`/`default`/`defaultRequest`, and container requests and limits of every rendered
workload and of the examples under docs/examples/.

## Bad example
```yaml
resources:
  - name: nvidia.com/gpu
    nominalQuota: 500m     # half a GPU: Kueue admits nothing
  - name: nvidia.com/mig-1g.10gb
    nominalQuota: 1Ki      # 1024 slices
```

## Fix
Write whole device counts without suffixes (`nominalQuota: 8`). To share a GPU, use a time-sliced or MIG pool
and count its shared devices.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.quantity import count_problem, counted_resource, has_binary_suffix, is_extended_resource
from ..domain.queues import core_objects, hard_amounts, quota_owners, raw_quota_fields
from ..domain.workloads import Workload, containers, pod_specs, workloads
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, K8sObject

ID = "CAP017"
SEVERITY = Severity.ERROR
SUMMARY = "A device count (GPUs, MIG slices, extended resources) is fractional or has a binary suffix"
LIMIT_FIELDS = ("max", "min", "default", "defaultRequest")  # maxLimitRequestRatio is a ratio, not a count
HINT = "write a whole number of devices without a suffix"
MISTAKEN_UNIT = "a memory unit on a device count is a mistake"


def _consequence(value: object, fractional: str) -> str:
    """What goes wrong: a binary suffix is whole (the API server takes it) but means a thousand-fold count."""
    return MISTAKEN_UNIT if has_binary_suffix(value) else fractional


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for obj in quota_owners(cluster):
            yield from _kueue_quotas(fleet, cluster, obj)
        for obj in core_objects(cluster, "ResourceQuota"):
            yield from _resource_quota(fleet, cluster, obj)
        for obj in core_objects(cluster, "LimitRange"):
            yield from _limit_range(fleet, cluster, obj)
    for workload in workloads(fleet):
        yield from _workload(fleet, workload)


def _kueue_quotas(fleet: Fleet, cluster: Cluster, obj: K8sObject) -> Iterator[Finding]:
    for path, resource, field, value in raw_quota_fields(obj.spec):
        problem = count_problem(value) if is_extended_resource(resource) else ""
        if problem:
            yield Finding(
                ID,
                SEVERITY,
                f"{obj.ref()}: {field} of {resource}: {problem}; "
                f"{_consequence(value, 'Kueue admits only whole devices')}",
                cluster=cluster.name,
                hint=HINT,
                **at(fleet.locate(obj, "spec", *path, field)),
            )


def _resource_quota(fleet: Fleet, cluster: Cluster, obj: K8sObject) -> Iterator[Finding]:
    for name, value in hard_amounts(obj):
        problem = count_problem(value) if is_extended_resource(counted_resource(str(name))) else ""
        if problem:
            yield Finding(
                ID,
                SEVERITY,
                f"{obj.ref()}: hard {name}: {problem}; "
                + _consequence(value, "pods request whole devices, so the quota admits only the whole part"),
                cluster=cluster.name,
                hint=HINT,
                **at(fleet.locate(obj, "spec", "hard", name)),
            )


def _limit_range(fleet: Fleet, cluster: Cluster, obj: K8sObject) -> Iterator[Finding]:
    limits = obj.spec.get("limits")
    for index, item in enumerate(limits if isinstance(limits, list) else []):
        for field in LIMIT_FIELDS if isinstance(item, dict) else ():
            amounts = item.get(field)
            for name, value in amounts.items() if isinstance(amounts, dict) else ():
                problem = count_problem(value) if is_extended_resource(str(name)) else ""
                if problem:
                    yield Finding(
                        ID,
                        SEVERITY,
                        f"{obj.ref()}: limits[{index}].{field} {name}: {problem}; "
                        f"{_consequence(value, 'the API server rejects the pods it applies to')}",
                        cluster=cluster.name,
                        hint=HINT,
                        **at(fleet.locate(obj, "spec", "limits", index, field, name)),
                    )


def _workload(fleet: Fleet, workload: Workload) -> Iterator[Finding]:
    for spec_path, spec, _metadata in pod_specs(workload):
        for kind, index, container in containers(spec):
            resources = container.get("resources")
            for section in ("requests", "limits") if isinstance(resources, dict) else ():
                amounts = resources.get(section)
                for name, value in amounts.items() if isinstance(amounts, dict) else ():
                    problem = count_problem(value) if is_extended_resource(str(name)) else ""
                    if problem:
                        where = workload.locate(fleet, *spec_path, kind, index, "resources", section, name)
                        yield Finding(
                            ID,
                            SEVERITY,
                            f"{workload.ref()}: container "
                            f"{container.get('name', index)} {section} {name}: {problem}; "
                            f"{_consequence(value, 'the API server requires a whole number')}",
                            cluster=workload.cluster.name if workload.cluster else "",
                            hint=HINT,
                            **at(where),
                        )
