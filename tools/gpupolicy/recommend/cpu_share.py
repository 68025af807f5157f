"""The cpu and memory a GPU quota stands for, in either queue shape, derived from the YAML alone.

Two shapes of team ClusterQueue exist:
- the old one (before decision 0069): each GPU flavor carries its own cpu and memory quota beside its GPUs, so
  the per-device ratio is read from the flavor's own quotas (`edits._set_in_step`);
- the reference fleet's (decision 0069): cpu and memory are a resource group of their own whose only flavor is
  `cpu`; the GPU flavors carry GPU resources alone. A GPU job's cores and memory are charged to that flavor
  (Kueue assigns one flavor per resource group: `assignFlavors` -> `findFlavorForPodSets` per group in
  kubernetes-sigs/kueue `pkg/scheduler/flavorassigner/flavorassigner.go`), so a GPU quota raised by N devices
  needs N x the per-device share more on the `cpu` flavor, or the GPUs wait for cpu quota.

In the second shape one cpu quota serves every GPU flavor of the queue, so the YAML holds one equation for as
many ratios as the queue has GPU resources: no per-flavor ratio can be read from it. What the data does fix
(decision 0090): each device's share of its node (`node.cpu / gpu.perNode` x the card share a device is,
WL006's usual size, from pool.yaml), and the queue's own proportion, its cpu flavor's nominal quota over the
node share of all its GPU nominal quotas, capped at 1. One device then stands for its node share x that
proportion: a queue that holds less cpu than its GPUs' nodes offer keeps holding that fraction as its GPUs
change, and cpu beyond the node shares (CPU-only work) is not multiplied onto new GPUs. Without a node shape
for the device's pool no ratio is derived (None: the GPUs change alone, and WL006 judges the result); the
header comment is never read (it is generated from the YAML, `domain/queue_header.py`).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..domain.gpu_resources import is_gpu_device_resource
from ..domain.quotas import cards, pool_of
from ..model import Cluster, ClusterQueue


def per_device(
    cluster: Cluster, queue: ClusterQueue, flavor: str, resource: str
) -> dict[str, Decimal] | None:
    """{"cpu": cores, "memory": bytes} one device of `resource` on `flavor` stands for in `queue` (the module
    docstring), to Decimal's precision; `edits` rounds what it writes up to the quota's unit. None when its
    pool has no node shape."""
    share = node_share(cluster, flavor, resource)
    if share is None:
        return None
    proportion = queue_proportion(cluster, queue)
    return {key: _dec(share[key] * proportion[key]) for key in share}


def node_share(cluster: Cluster, flavor: str, resource: str) -> dict[str, Fraction] | None:
    """{"cpu", "memory"} of its node one device of `resource` on `flavor`'s pool is: the node's per-GPU share
    times the card share the device is; None when the pool, its node shape or the card share is unknown."""
    pool = pool_of(cluster, flavor)
    share = cards(pool, resource) if pool is not None else None
    if pool is None or share is None or not pool.gpus_per_node:
        return None
    if pool.node_cpu is None or pool.node_memory is None:
        return None
    return {
        "cpu": Fraction(str(pool.node_cpu)) / pool.gpus_per_node * share,
        "memory": Fraction(pool.node_memory) / pool.gpus_per_node * share,
    }


def queue_proportion(cluster: Cluster, queue: ClusterQueue) -> dict[str, Fraction]:
    """{"cpu", "memory"}: the queue's cpu-flavor nominal quota over the node share of its GPU nominal quotas,
    at most 1; 1 when it holds no GPU quota yet, has no cpu flavor, or a GPU quota's node share is unknown
    (the proportion would then be read off part of the quotas)."""
    held = _cpu_flavor_nominal(queue)
    offered = {"cpu": Fraction(0), "memory": Fraction(0)}
    for flavor, quota in queue.quotas():
        if not is_gpu_device_resource(quota.name) or not quota.nominal:
            continue
        share = node_share(cluster, flavor, quota.name)
        if share is None:
            return {"cpu": Fraction(1), "memory": Fraction(1)}
        for key in offered:
            offered[key] += share[key] * Fraction(str(quota.nominal))
    return {
        key: min(Fraction(1), held[key] / offered[key]) if offered[key] and key in held else Fraction(1)
        for key in offered
    }


def _cpu_flavor_nominal(queue: ClusterQueue) -> dict[str, Fraction]:
    """cpu and memory nominal quota of the flavor that serves the GPU pod sets' cpu and memory: the first
    flavor of a resource group covering cpu or memory and no GPU device (decision 0069's `cpu`, as
    `cpu_flavor` finds it in the YAML); {} in the old shape."""
    for group in queue.resource_groups:
        covered = set(group.covered_resources)
        serves_gpus = any(is_gpu_device_resource(r) for r in covered)
        if covered & {"cpu", "memory"} and not serves_gpus and group.flavors:
            return {
                q.name: Fraction(str(q.nominal))
                for q in group.flavors[0].resources
                if q.name in ("cpu", "memory")
            }
    return {}


def cpu_flavor(spec: Any, gpu_group: Any) -> Any | None:
    """The YAML flavor that serves cpu and memory for the GPU group's pod sets: the first flavor of another
    resource group covering cpu or memory (decision 0069's `cpu`); None in the old shape."""
    for group in spec.get("resourceGroups") or ():
        if group is gpu_group:
            continue
        covered = set(group.get("coveredResources") or ())
        if covered & {"cpu", "memory"} and group.get("flavors"):
            return group["flavors"][0]
    return None


def _dec(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)
