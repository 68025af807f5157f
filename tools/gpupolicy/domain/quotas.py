"""Quota arithmetic in one place: Kueue quota entries, the hardware a flavor stands for, and what a cohort
lends.

The CAP rules, the quota page (docsgen/quotas.py) and the simulator all read quota through this module, so the
generated page and the rules cannot disagree about what is given out or what stands behind it.

How quota meets hardware in Kueue: a ResourceFlavor's `nodeLabels` become the node selector of every pod
admitted on that flavor, so a flavor stands for all the nodes its labels select; here, every pool whose
declared node labels it selects (`Cluster.pools_of_flavor`). Quota is given out per flavor by ClusterQueues
and by Cohort objects (Kueue v1beta2 `Cohort.spec.resourceGroups`); both are guaranteed, so both count. Two
questions follow, and each has its own function:

- `flavor_capacity`: what the nodes behind a flavor expose, summed over every pool it selects. This is Kueue's
  reading and what a quota's share of its hardware is measured against.
- `pool_of` / `nominal_per_pool`: the quota given out on one pool, by the flavors that select that pool alone.
  CAP001 compares it with what the pool exposes. A flavor that selects several pools cannot be charged to any
  one of them (CAP003 reports it); quota of two flavors on one pool is charged to that pool (CAP004 reports
  it).
When every GPU flavor selects exactly one pool and every pool has one flavor (what CAP003 and CAP004 demand),
the two agree: a flavor's nominal total is its pool's, and its capacity is the pool's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..findings import Location
from ..model import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    Cluster,
    ClusterQueue,
    Fleet,
    K8sObject,
    Pool,
    ResourceGroup,
    ResourceQuota,
)
from . import catalog
from .gpu_resources import is_nvidia_resource

# --- quota entries
# -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaEntry:
    """One `resources[]` entry of a ClusterQueue or Cohort, with the field path that locates it."""

    kind: str  # ClusterQueue | Cohort
    owner: str
    obj: K8sObject
    flavor: str
    quota: ResourceQuota
    path: tuple  # ("spec", "resourceGroups", g, "flavors", f, "resources", r)

    def locate(self, fleet: Fleet, *field: Any) -> Location | None:
        return fleet.locate(self.obj, *self.path, *field)

    @property
    def label(self) -> str:
        return self.owner if self.kind == "ClusterQueue" else f"cohort {self.owner}"


def _entries(
    kind: str, owner: str, obj: K8sObject, groups: tuple[ResourceGroup, ...]
) -> Iterator[QuotaEntry]:
    for g, group in enumerate(groups):
        for f, flavor in enumerate(group.flavors):
            for r, quota in enumerate(flavor.resources):
                path = ("spec", "resourceGroups", g, "flavors", f, "resources", r)
                yield QuotaEntry(kind, owner, obj, flavor.flavor, quota, path)


def queue_entries(queue: ClusterQueue) -> Iterator[QuotaEntry]:
    yield from _entries("ClusterQueue", queue.name, queue.obj, queue.resource_groups)


def draws(queue: ClusterQueue, entry: QuotaEntry) -> bool:
    """Whether the queue can get devices from the entry's flavor: nominal quota, or borrowing through its
    cohort."""
    if entry.quota.nominal > 0:
        return True
    limit = entry.quota.borrowing_limit
    return bool(queue.cohort) and (limit is None or limit > 0)


def shared_draws(
    cluster: Cluster, queue: ClusterQueue, sharings: tuple[str, ...]
) -> Iterator[tuple[QuotaEntry, Pool]]:
    """(entry, pool): the first entry per flavor through which the queue can draw an NVIDIA resource from a
    pool shared in one of `sharings` (`Pool.sharing`), what SHARE008 and SHARE009 report once per flavor."""
    seen: set[str] = set()
    for entry in queue_entries(queue):
        pool = pool_of(cluster, entry.flavor)
        if (
            pool is not None
            and pool.sharing in sharings
            and is_nvidia_resource(entry.quota.name)
            and entry.flavor not in seen
            and draws(queue, entry)
        ):
            seen.add(entry.flavor)
            yield entry, pool


def quota_entries(cluster: Cluster) -> list[QuotaEntry]:
    """Every quota entry of every ClusterQueue, then of every Cohort object, in name order (built once per
    cluster: several rules and the quota page walk them)."""

    def build() -> list[QuotaEntry]:
        entries = [
            e for name in sorted(cluster.cluster_queues) for e in queue_entries(cluster.cluster_queues[name])
        ]
        for name in sorted(cluster.cohorts):
            cohort = cluster.cohorts[name]
            if cohort.obj is not None:
                entries += _entries("Cohort", name, cohort.obj, cohort.resource_groups)
        return entries

    return cluster.memo("quota_entries", build)


# --- flavors and the hardware behind them
# --------------------------------------------------------------------


def pools_of(cluster: Cluster, flavor_name: str) -> list[Pool]:
    """Every pool the flavor's nodeLabels select; [] for an unknown flavor."""
    flavor = cluster.flavors.get(flavor_name)
    return cluster.pools_of_flavor(flavor) if flavor else []


def pool_of(cluster: Cluster, flavor_name: str) -> Pool | None:
    """The one pool a flavor selects; None for an unknown flavor or one selecting no or several pools."""
    flavor = cluster.flavors.get(flavor_name)
    return cluster.pool_of_flavor(flavor) if flavor else None


def flavors_of(cluster: Cluster, pool_name: str) -> set[str]:
    """The flavors that select the pool (and it alone: `pool_of`)."""
    return {name for name in cluster.flavors if (pool := pool_of(cluster, name)) and pool.name == pool_name}


def capacity_known(cluster: Cluster, pool: Pool) -> bool:
    """A MIG pool whose layout is missing has no computable capacity (the MIG rules report the layout)."""
    return not pool.mig_layout or pool.mig_layout in cluster.mig_configs


def failure_domains(pool: Pool) -> list[tuple[str, int]]:
    """(description, nodes lost) for each failure the pool's production quota must survive (CAP005): one
    node, and for a pool spread over several zones, its largest zone (ties by zone name)."""
    domains = [("one node", 1)]
    zones = {zone: nodes for zone, nodes in pool.zones.items() if nodes > 0}
    if len(zones) > 1:
        zone, nodes = max(sorted(zones.items()), key=lambda item: item[1])
        domains.append((f"zone {zone} ({nodes} nodes)", nodes))
    return domains


def surviving_capacity(pool: Pool, resource: str) -> tuple[str, int]:
    """(the worst failure, what the pool still exposes of `resource` after it): the bound CAP005 holds
    production nominal quota to."""
    return min(
        ((what, pool.capacity_without(lost).get(resource, 0)) for what, lost in failure_domains(pool)),
        key=lambda item: item[1],
    )


def production_nominal(cluster: Cluster) -> dict[tuple[str, str], list[QuotaEntry]]:
    """(pool, GPU resource) -> the quota entries of `gpupolicy.io/tier: production` ClusterQueues that hold
    nominal quota there, on a pool whose capacity is known and exposes the resource (what CAP005 holds to
    `surviving_capacity`), by pool and resource."""
    demand: dict[tuple[str, str], list[QuotaEntry]] = defaultdict(list)
    for queue in cluster.cluster_queues.values():
        if queue.tier != "production":
            continue
        for entry in queue_entries(queue):
            pool = pool_of(cluster, entry.flavor)
            if (
                pool
                and is_nvidia_resource(entry.quota.name)
                and capacity_known(cluster, pool)
                and entry.quota.name in pool.capacity
                and entry.quota.nominal > 0
            ):
                demand[(pool.name, entry.quota.name)].append(entry)
    return dict(sorted(demand.items()))


def flavor_capacity(cluster: Cluster, flavor_name: str) -> dict[str, int]:
    """Resource -> what the nodes behind a flavor expose: summed over every pool its nodeLabels select."""
    total: dict[str, int] = {}
    for pool in pools_of(cluster, flavor_name):
        for resource, amount in pool.capacity.items():
            total[resource] = total.get(resource, 0) + amount
    return total


def nominal_per_flavor(cluster: Cluster) -> dict[tuple[str, str], int | float]:
    """(flavor, GPU resource) -> nominal quota given out on it by every ClusterQueue and Cohort object."""
    totals: dict[tuple[str, str], int | float] = {}
    for entry in quota_entries(cluster):
        if is_nvidia_resource(entry.quota.name):
            key = (entry.flavor, entry.quota.name)
            totals[key] = totals.get(key, 0) + entry.quota.nominal
    return totals


def nominal_per_pool(cluster: Cluster) -> dict[tuple[str, str], list[QuotaEntry]]:
    """(pool, GPU resource) -> the quota entries charged to that pool: those of flavors that select it alone,
    for a resource the pool exposes, on a pool whose capacity is known (CAP001 compares their sum with it)."""

    def build() -> dict[tuple[str, str], list[QuotaEntry]]:
        by_pool: dict[tuple[str, str], list[QuotaEntry]] = defaultdict(list)
        for entry in quota_entries(cluster):
            pool = pool_of(cluster, entry.flavor)
            if pool is None or not is_nvidia_resource(entry.quota.name) or not capacity_known(cluster, pool):
                continue
            if entry.quota.name in pool.capacity:  # CAP002 reports a resource the pool does not expose
                by_pool[(pool.name, entry.quota.name)].append(entry)
        return dict(sorted(by_pool.items()))

    return cluster.memo("nominal_per_pool", build)


def headroom(cluster: Cluster, pool: Pool) -> dict[str, int | float]:
    """Resource -> the pool's capacity that no ClusterQueue or Cohort holds as nominal quota (negative:
    promised more than it has, which CAP001 reports); {} when the pool's capacity is unknown. Quota on a
    flavor that
    selects several pools is charged to none of them, as in `nominal_per_pool`."""
    if not capacity_known(cluster, pool):
        return {}
    charged = nominal_per_pool(cluster)
    return {
        resource: amount - sum(entry.quota.nominal for entry in charged.get((pool.name, resource), []))
        for resource, amount in pool.capacity.items()
    }


def share_percent(nominal: float, capacity: float) -> Decimal | None:
    """A quota as a percentage of the capacity it draws on; exact, so a quota of 1e400 cannot overflow a
    float.
    None when there is no capacity to measure against."""
    if not capacity:
        return None
    return 100 * Decimal(nominal) / Decimal(capacity)


def share_text(nominal: float, capacity: float) -> str | None:
    """`share_percent` as the quota page and `diff` print it: "75%", or "1.0e+402%" for an absurd quota."""
    percent = share_percent(nominal, capacity)
    if percent is None:
        return None
    return f"{percent:.0f}%" if abs(percent) < 10**6 else f"{percent:.1e}%"


# --- cohorts and what a queue can admit --------------------------------------------------------------------


def cohort_root(cluster: Cluster, cohort: str) -> str:
    """The root of a cohort's tree (a cycle stops at the first repeated cohort)."""
    seen = set()
    while cohort and cohort not in seen:
        seen.add(cohort)
        parent = cluster.cohorts[cohort].parent if cohort in cluster.cohorts else ""
        if not parent:
            return cohort
        cohort = parent
    return cohort


def cohort_tree(cluster: Cluster, root: str) -> set[str]:
    """Every cohort under `root` (itself included)."""
    members = {root}
    changed = True
    while changed:
        changed = False
        for name, cohort in cluster.cohorts.items():
            if cohort.parent in members and name not in members:
                members.add(name)
                changed = True
    return members


def lendable(cluster: Cluster, queue: ClusterQueue) -> dict[tuple[str, str], float]:
    """(flavor, resource) -> what the rest of the queue's cohort tree can lend it: the other queues' nominal
    quota (capped by their lendingLimit) plus the cohorts' own nominal quota."""
    if not queue.cohort:
        return {}
    total = dict(_tree_lendable(cluster, cohort_root(cluster, queue.cohort)))
    for key, lent in _lent_by(queue).items():  # a queue does not lend to itself
        total[key] = total.get(key, 0.0) - lent
    return total


def _lent_by(queue: ClusterQueue) -> dict[tuple[str, str], float]:
    lent: dict[tuple[str, str], float] = defaultdict(float)
    for flavor, quota in queue.quotas():
        lent[(flavor, quota.name)] += (
            quota.nominal if quota.lending_limit is None else min(quota.nominal, quota.lending_limit)
        )
    return lent


def _tree_lendable(cluster: Cluster, root: str) -> dict[tuple[str, str], float]:
    """Everything a cohort tree can lend: computed once per cluster and root, as every queue of the tree
    asks."""

    def build() -> dict[tuple[str, str], float]:
        tree = cohort_tree(cluster, root)
        total: dict[tuple[str, str], float] = defaultdict(float)
        for other in cluster.cluster_queues.values():
            if other.cohort in tree:
                for item, lent in _lent_by(other).items():
                    total[item] += lent
        for name in tree:
            cohort = cluster.cohorts.get(name)
            for group in cohort.resource_groups if cohort else ():
                for fq in group.flavors:
                    for quota in fq.resources:
                        total[(fq.flavor, quota.name)] += quota.nominal
        return dict(total)

    return cluster.memo(("tree_lendable", root), build)


def admissible(cluster: Cluster, queue: ClusterQueue) -> dict[str, float]:
    """Resource -> the most the queue can have admitted at once, over all its flavors: nominal quota plus
    what it may borrow (its borrowingLimit, or everything the cohort can lend when unlimited)."""
    can_borrow = lendable(cluster, queue)
    total: dict[str, float] = defaultdict(int)  # ints stay ints: 1e400 + 0.0 would overflow a float
    for flavor, quota in queue.quotas():
        borrow = can_borrow.get((flavor, quota.name), 0)
        if quota.borrowing_limit is not None:
            borrow = min(borrow, quota.borrowing_limit)
        total[quota.name] += quota.nominal + borrow
    return dict(total)


def flavor_limit(cluster: Cluster, queue: ClusterQueue, flavor: str, resource: str) -> tuple[float, float]:
    """(nominal quota, the most the queue can use) of one resource in one flavor, the rest of the cohort idle:
    Kueue's `PotentialAvailable` (kubernetes-sigs/kueue `pkg/cache/scheduler/clusterqueue_snapshot.go`), the
    nominal quota plus what the
    cohort can lend up to the queue's borrowingLimit. A resource the flavor does not list has no quota."""
    return flavor_limits(cluster, queue).get((flavor, resource), (0, 0))


def flavor_limits(cluster: Cluster, queue: ClusterQueue) -> dict[tuple[str, str], tuple[float, float]]:
    """`flavor_limit` of every (flavor, resource) the queue lists, computed once per queue and run."""
    return cluster.memo(("flavor_limits", queue.name), lambda: _flavor_limits(cluster, queue))


def _flavor_limits(cluster: Cluster, queue: ClusterQueue) -> dict[tuple[str, str], tuple[float, float]]:
    can_borrow = lendable(cluster, queue)
    limits = {}
    for flavor, quota in queue.quotas():
        borrow = can_borrow.get((flavor, quota.name), 0)
        if quota.borrowing_limit is not None:
            borrow = min(borrow, quota.borrowing_limit)
        limits.setdefault((flavor, quota.name), (quota.nominal, quota.nominal + max(borrow, 0)))
    return limits


def cards(pool: Pool, resource: str) -> Fraction | None:
    """The share of one physical GPU a device of `resource` on this pool stands for; None when unknown."""
    replicas = pool.time_slicing_replicas or pool.mps_replicas or 1
    name = resource.removesuffix(".shared")
    if name.startswith(MIG_RESOURCE_PREFIX):
        try:
            return catalog.card_fraction(name, pool.gpu_model) / replicas
        except (KeyError, ValueError):
            return None  # MIG001 reports an unknown profile
    if name == GPU_RESOURCE:
        if pool.mig_layout:  # single strategy: every device is one MIG instance of the layout
            exposed = pool.capacity.get(resource, 0)
            return Fraction(pool.gpus, exposed) if exposed else None
        return Fraction(1, replicas)
    return None
