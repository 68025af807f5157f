"""Which quota a pod set charges on a flavor: Kueue counts every resource name on its own.

Kueue keeps quota and usage per (flavor, resource name) (pkg/resources `FlavorResource`; the quota tree of
pkg/cache/scheduler/resource_node.go holds one entry per FlavorResource) and assigns a flavor only when each
resource the pod set requests fits its own quota (pkg/scheduler/flavorassigner/flavorassigner.go
`findFlavorForPodSetResource`, `fitsResourceQuota` per resource). So a flavor with 8 nvidia.com/mig-1g.10gb
and 2 nvidia.com/mig-3g.40gb admits at most two 3g pods, however many 1g slices sit unused: nothing is summed
across profiles.

The simulator keeps the GPU quota of a flavor as one bucket in milli-GPUs where a pod's request is one
resource whatever its size (exclusive and time-sliced pools: `nvidia.com/gpu`); a MIG pool replayed per layout
gets one bucket per resource name, counted in milli-instances (1000 = one instance, as Kueue counts one
`nvidia.com/mig-3g.40gb`), and a pod charges the bucket of the instance it takes.
"""

from __future__ import annotations

import math

from ..domain import catalog
from ..model import GPU_RESOURCE, MIG_RESOURCE_PREFIX

MILLI = 1000
# (resource name, nominal, borrowingLimit or None, lendingLimit or None), the amounts in milli-units
ResourceBucket = tuple[str, int, int | None, int | None]


def bucket_key(flavor: str, resource: str) -> str:
    """The quota tree's key of one flavor's resource (the flavor's own name for its single GPU bucket)."""
    return f"{flavor}/{resource}" if resource else flavor


def resource_buckets(quotas, bounded) -> tuple[ResourceBucket, ...]:
    """Per-resource buckets of a flavor's model quotas (`ResourceQuota`s) on a MIG pool replayed per layout:
    every `nvidia.com/mig-*` and `nvidia.com/gpu` (the single strategy's instances) quota, in milli-units;
    `bounded` clamps an absurd amount (policy._bounded)."""
    found: list[ResourceBucket] = []
    for quota in quotas:
        if not (quota.name.startswith(MIG_RESOURCE_PREFIX) or quota.name == GPU_RESOURCE):
            continue
        limit = quota.borrowing_limit
        lend = quota.lending_limit
        found.append(
            (
                quota.name,
                _milli(bounded(quota.nominal)),
                None if limit is None else _milli(bounded(limit)),
                None if lend is None else _milli(bounded(lend)),
            )
        )
    return tuple(found)


def _milli(amount: float) -> int:
    return math.floor(amount * MILLI)


def pod_resource(profile: str, buckets: tuple[ResourceBucket, ...]) -> str | None:
    """The resource name a pod taking a `profile` instance requests among the flavor's buckets: its profile's
    own name (mixed strategy, `catalog.resource_name`), else `nvidia.com/gpu` (single strategy); None when the
    flavor has quota for neither, so the flavor cannot admit the pod (Kueue: no quota for that resource)."""
    names = {bucket[0] for bucket in buckets}
    for name in (catalog.resource_name(profile, "mixed"), GPU_RESOURCE):
        if name in names:
            return name
    return None


def demand(
    flavor: str, buckets: tuple[ResourceBucket, ...], pods: int, profile: str, total: int
) -> tuple[str, int] | None:
    """(quota key, amount) a pod set of `pods` pods charges on the flavor: the flavor's GPU bucket and `total`
    milli-GPUs, or on a per-resource flavor one instance per pod of the resource its `profile` is."""
    if not buckets:
        return flavor, total
    resource = pod_resource(profile, buckets) if profile else None
    if resource is None:
        return None
    return bucket_key(flavor, resource), pods * MILLI


def covers_gpu(gpu_names: tuple[str, ...]) -> bool:
    """Whether a flavor's quota admits a pod asking `nvidia.com/gpu` (a whole-card pod on a time-sliced pool):
    Kueue finds no quota for a resource the flavor does not list, such as a pool renamed to
    `nvidia.com/gpu.shared` (flavorassigner.go: the flavor lacks the resource); hand-built quotas name
    none."""
    return not gpu_names or GPU_RESOURCE in gpu_names
