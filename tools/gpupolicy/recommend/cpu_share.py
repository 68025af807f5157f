"""The cpu and memory a GPU quota stands for, in either queue shape.

Two shapes of team ClusterQueue exist:
- the old one (before decision 0069): each GPU flavor carries its own cpu and memory quota beside its GPUs, so
  the per-device ratio is read from the flavor's own quotas (`edits._set_in_step`);
- the reference fleet's (decision 0069): cpu and memory are a resource group of their own whose only flavor is
  `cpu`; the GPU flavors carry GPU resources alone. A GPU job's cores and memory are charged to that flavor
  (Kueue assigns one flavor per resource group: `assignFlavors` -> `findFlavorForPodSets` per group in
  kubernetes-sigs/kueue `pkg/scheduler/flavorassigner/flavorassigner.go`), so a GPU quota raised by N devices
  needs N x the per-device share more on the `cpu` flavor, or the GPUs wait for cpu quota.

In the second shape the YAML no longer says how much cpu one device of a pool stands for. The queue's header
comment states it (`#   <flavor> (...): ... cpu/memory: 2 cpu + 16Gi per gpu.`, per profile for MIG, or `per
card's worth of slices` after a layout change); without it, the pool's node share per card (`node.cpu /
gpu.perNode`, the size WL006 calls usual) times the card share a device is (WL006's `cards`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..domain.quotas import cards, pool_of
from ..model import Cluster

GI = Decimal(2**30)
CARD = "card"  # the `per card's worth of slices` ratio: per physical card, not per device
_RATIO = re.compile(r"(\d+(?:\.\d+)?) cpu \+ (\d+(?:\.\d+)?)Gi per (card's worth of slices|[\w./-]+?)(?=[;.]\s|[;.]?$)")


def stated_ratios(text: str, flavor: str) -> dict[str, tuple[Decimal, Decimal]]:
    """resource (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`, or CARD) -> (cpu, memory bytes) per device, as the
    header line of `flavor` states them; {} when the file states none."""
    line = re.search(rf"^#\s+{re.escape(flavor)} \([^)]*\):.*?cpu/memory: (.*)$", text, re.M)
    if line is None:
        return {}
    found = {}
    for cpu, memory, per in _RATIO.findall(line.group(1)):
        name = CARD if per.startswith("card") else f"nvidia.com/{per}"
        found[name] = (Decimal(cpu), Decimal(memory) * GI)
    return found


def per_device(cluster: Cluster, text: str, flavor: str, resource: str) -> dict[str, Decimal] | None:
    """{"cpu": cores, "memory": bytes} one device of `resource` on `flavor` stands for: the header's ratio, else
    the pool's node share; None when neither is known."""
    pool = pool_of(cluster, flavor)
    share = cards(pool, resource) if pool is not None else None
    stated = stated_ratios(text, flavor)
    if resource in stated:
        cpu, memory = stated[resource]
        return {"cpu": cpu, "memory": memory}
    if CARD in stated and share is not None:
        cpu, memory = stated[CARD]
        return {"cpu": cpu * _dec(share), "memory": memory * _dec(share)}
    if pool is None or share is None or pool.node_cpu is None or pool.node_memory is None or not pool.gpus_per_node:
        return None
    return {"cpu": Decimal(pool.node_cpu) / pool.gpus_per_node * _dec(share),
            "memory": Decimal(pool.node_memory) / pool.gpus_per_node * _dec(share)}


def implied(cluster: Cluster, text: str, flavor: str, amounts: dict[str, Any]) -> dict[str, Decimal]:
    """{"cpu", "memory"} the flavor's GPU `amounts` (resource -> devices) stand for at `per_device`; {} when a
    resource with an amount has no known ratio."""
    total = {"cpu": Decimal(0), "memory": Decimal(0)}
    for name, amount in amounts.items():
        if not amount:
            continue
        ratio = per_device(cluster, text, flavor, name)
        if ratio is None:
            return {}
        for key in total:
            total[key] += ratio[key] * Decimal(amount)
    return total


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
