"""The lending knob: a queue of one class of work borrowing the cards of another class's pool.

Decisions 0072 and 0073 did this by hand (research and serving onto the training pool, training onto the whole
A100s): the borrower lists the lender's flavor with `nominalQuota: 0` and a `borrowingLimit`. A knob
`<queue>/<flavor>/<resource>/borrow` is offered for each searched queue and each flavor of an exclusive pool
(whole cards, resource `nvidia.com/gpu`; not time-sliced, MIG or MPS: a whole-card pod there would share a
card, decision 0060) whose class (`simulate.policy.pool_classes`: inference or training, by the
nominal quota held there) differs from the queue's (`queue_class`), where
- the queue holds no quota there yet: it does not list the flavor, or lists it at nominal 0 and a borrowing
  limit of 0 (a flavor it already borrows on has the ordinary borrow knob, space._quota_knobs);
- the flavor can go in the queue's resource group of GPU resources only (the split shape of decision 0069: cpu
  and memory in a group of their own), so the new entry needs no cpu or memory quota;
- some other ClusterQueue of the queue's cohort tree holds nominal quota on the flavor: there is something to
  borrow.
Its values are a small grid (`GRID`: none, a quarter, half or all of the flavor's devices). A new entry goes
last in its group, so Kueue tries the queue's own flavors first (flavor assignment walks a group's flavors in
order: kubernetes-sigs/kueue `pkg/scheduler/flavorassigner/flavorassigner.go`, `findFlavorForPodSets`).
Reclaim is the lender's as declared: Kueue takes lent quota back only by preemption under the lender's
`preemption.reclaimWithinCohort` (`pkg/scheduler/preemption/preemption.go`), which no knob touches.
"""

from __future__ import annotations

import dataclasses
import math

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import flavor_capacity, pool_of
from ..model import Cluster, ClusterQueue, FlavorQuotas, ResourceGroup, ResourceQuota

GPU = "nvidia.com/gpu"
EXCLUSIVE = "exclusive"  # whole cards: a training pod admitted to a time-sliced flavor would share a card
GRID = (0.0, 0.25, 0.5, 1.0)  # shares of the flavor's devices a lending knob may set as the borrowing limit


def grid(devices: int) -> tuple[int, ...]:
    """The borrowing limits searched on a flavor of `devices` devices: 0 and GRID's shares, rounded up."""
    return tuple(sorted({math.ceil(share * devices) for share in GRID}))


def cohort_root(cluster: Cluster, cohort: str) -> str:
    """The root of the cohort tree `cohort` is in (itself in a flat fleet); a cycle stops where it closes."""
    seen = set()
    while cohort in cluster.cohorts and cluster.cohorts[cohort].parent and cohort not in seen:
        seen.add(cohort)
        cohort = cluster.cohorts[cohort].parent
    return cohort


def gpu_group(cq: ClusterQueue) -> int | None:
    """The index of the queue's resource group that covers nvidia.com/gpu and GPU resources only."""
    for index, group in enumerate(cq.resource_groups):
        if GPU in group.covered_resources and all(is_nvidia_resource(r) for r in group.covered_resources):
            return index
    return None


def holds_nothing(cq: ClusterQueue, flavor: str) -> bool | None:
    """True: the queue does not list the flavor; False: it lists it at nominal 0 and borrowing limit 0 on
    every resource (it can borrow nothing there); None: it holds or may borrow something there."""
    entries = [fq for g in cq.resource_groups for fq in g.flavors if fq.flavor == flavor]
    if not entries:
        return True
    quiet = all(q.nominal == 0 and q.borrowing_limit == 0 for fq in entries for q in fq.resources)
    return False if quiet else None


def lenders(cluster: Cluster, cq: ClusterQueue, flavor: str) -> list[str]:
    """The other ClusterQueues of the queue's cohort tree that hold nominal GPU quota on the flavor."""
    root = cohort_root(cluster, cq.cohort)
    return sorted(
        other.name
        for other in cluster.cluster_queues.values()
        if other.name != cq.name
        and other.cohort
        and cohort_root(cluster, other.cohort) == root
        and any(
            q.name == GPU and q.nominal > 0
            for g in other.resource_groups
            for fq in g.flavors
            if fq.flavor == flavor
            for q in fq.resources
        )
    )


@dataclasses.dataclass(frozen=True)
class Lending:
    queue: str
    flavor: str
    pool: str
    devices: int  # what the flavor's nodes expose of nvidia.com/gpu
    added: bool  # the queue does not list the flavor yet: the entry is added


def lendings(
    cluster: Cluster, searched: list[ClusterQueue], pool_class: dict[str, str], queue_class: dict[str, str]
) -> list[Lending]:
    """Every (queue, flavor) a lending knob is offered for (see the module docstring), in a stable order."""
    found = []
    for cq in searched:
        if gpu_group(cq) is None:
            continue
        for flavor in sorted(cluster.flavors):
            pool = pool_of(cluster, flavor)
            devices = int(flavor_capacity(cluster, flavor).get(GPU, 0))
            if (
                pool is None
                or pool.access_mode != EXCLUSIVE
                or devices <= 0
                or pool_class.get(pool.name) in (None, queue_class[cq.name])
            ):
                continue
            state = holds_nothing(cq, flavor)
            if state is None or (not state and not _in_gpu_group(cq, flavor)):
                continue
            if not lenders(cluster, cq, flavor):
                continue
            found.append(Lending(cq.name, flavor, pool.name, devices, state))
    return found


def _in_gpu_group(cq: ClusterQueue, flavor: str) -> bool:
    index = gpu_group(cq)
    return index is not None and any(fq.flavor == flavor for fq in cq.resource_groups[index].flavors)


def with_entry(cq: ClusterQueue, flavor: str) -> ClusterQueue:
    """The queue with the flavor listed last in its GPU-only resource group, every covered resource at nominal
    0 and borrowing limit 0 (a lending knob then sets the GPU's limit); unchanged when it lists the flavor."""
    if any(fq.flavor == flavor for g in cq.resource_groups for fq in g.flavors):
        return cq
    index = gpu_group(cq)
    group = cq.resource_groups[index]
    entry = FlavorQuotas(flavor, tuple(ResourceQuota(r, 0, 0) for r in group.covered_resources))
    groups = list(cq.resource_groups)
    groups[index] = ResourceGroup(group.covered_resources, (*group.flavors, entry))
    return dataclasses.replace(cq, resource_groups=tuple(groups))


def add_entry(spec, flavor: str) -> None:
    """The same entry in a ClusterQueue's YAML `spec` (round-trip), when it does not list the flavor yet: last
    in the group that covers nvidia.com/gpu and GPU resources only, each covered resource at `nominalQuota: 0`
    and `borrowingLimit: 0`, in the group's order (Kueue requires each flavor to list the covered
    resources)."""
    groups = spec.get("resourceGroups") or []
    if any(f.get("name") == flavor for g in groups for f in g.get("flavors") or ()):
        return
    for group in groups:
        covered = [str(r) for r in group.get("coveredResources") or ()]
        if GPU in covered and all(is_nvidia_resource(r) for r in covered):
            group["flavors"].append(
                {
                    "name": flavor,
                    "resources": [{"name": r, "nominalQuota": 0, "borrowingLimit": 0} for r in covered],
                }
            )
            return
