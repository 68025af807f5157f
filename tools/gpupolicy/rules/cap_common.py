"""Shared helpers of the capacity and quota rules (CAP*): quota entries with their source paths, label
selectors, the flavor -> pool join and what a queue can admit. Not a rule (no `ID`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..findings import Location
from ..model import Cluster, ClusterQueue, Fleet, K8sObject, Pool, ResourceGroup, ResourceQuota
from ..selectors import label_selector_matches

GPU_DOMAIN = "nvidia.com/"


def is_gpu_resource(name: str) -> bool:
    return name.startswith(GPU_DOMAIN)


PLAIN_DIGITS = 15  # beyond this a quota is absurd anyway: scientific notation, not hundreds of digits


def number(value: float) -> str:
    """A quota for a message: 16 rather than 16.0; 1.000e+400 for a number too large for a float (and for
    Python's int-to-text limit), never an exception."""
    amount = Decimal(value)
    if not amount.is_finite():
        return str(amount)
    if abs(amount) >= Decimal(10) ** PLAIN_DIGITS:
        return f"{amount:.3e}"
    return str(int(amount)) if amount == amount.to_integral_value() else str(value)


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


def _entries(kind: str, owner: str, obj: K8sObject, groups: tuple[ResourceGroup, ...]) -> Iterator[QuotaEntry]:
    for g, group in enumerate(groups):
        for f, flavor in enumerate(group.flavors):
            for r, quota in enumerate(flavor.resources):
                path = ("spec", "resourceGroups", g, "flavors", f, "resources", r)
                yield QuotaEntry(kind, owner, obj, flavor.flavor, quota, path)


def queue_entries(queue: ClusterQueue) -> Iterator[QuotaEntry]:
    yield from _entries("ClusterQueue", queue.name, queue.obj, queue.resource_groups)


def quota_entries(cluster: Cluster) -> list[QuotaEntry]:
    """Every quota entry of every ClusterQueue, then of every Cohort object, in name order (built once per
    cluster: several CAP rules walk them)."""
    def build() -> list[QuotaEntry]:
        entries = [e for name in sorted(cluster.cluster_queues) for e in queue_entries(cluster.cluster_queues[name])]
        for name in sorted(cluster.cohorts):
            cohort = cluster.cohorts[name]
            if cohort.obj is not None:
                entries += _entries("Cohort", name, cohort.obj, cohort.resource_groups)
        return entries

    return cluster.memo("quota_entries", build)


# --- flavors and pools ---------------------------------------------------------------------------------------

def pool_of(cluster: Cluster, flavor_name: str) -> Pool | None:
    """The one pool a flavor selects; None for an unknown flavor or one selecting no or several pools."""
    flavor = cluster.flavors.get(flavor_name)
    return cluster.pool_of_flavor(flavor) if flavor else None


def capacity_known(cluster: Cluster, pool: Pool) -> bool:
    """A MIG pool whose layout is missing has no computable capacity (the MIG rules report the layout)."""
    return not pool.mig_layout or pool.mig_layout in cluster.mig_configs


def shared_pool(pool: Pool) -> bool:
    """A pool whose devices are fractions of a GPU: time-sliced, MPS or MIG."""
    return pool.sharing in ("time-sliced", "mps", "mig")


# --- label selectors (metav1.LabelSelector) ------------------------------------------------------------------

def selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """A ClusterQueue's namespaceSelector: None selects nothing, {} everything."""
    return selector is not None and label_selector_matches(selector, labels)


def queues_selecting(cluster: Cluster, labels: dict[str, str]) -> list[ClusterQueue]:
    key = ("queues_selecting", tuple(sorted((str(k), str(v)) for k, v in labels.items())))
    # several rules ask this per namespace
    return cluster.memo(key, lambda: [cq for _, cq in sorted(cluster.cluster_queues.items())
                                      if selector_matches(cq.namespace_selector, labels)])


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
        lent[(flavor, quota.name)] += quota.nominal if quota.lending_limit is None else min(quota.nominal,
                                                                                             quota.lending_limit)
    return lent


def _tree_lendable(cluster: Cluster, root: str) -> dict[tuple[str, str], float]:
    """Everything a cohort tree can lend: computed once per cluster and root, as every queue of the tree asks."""
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


NAME_LABEL = "kubernetes.io/metadata.name"  # the API server sets it on every namespace


def namespace_labels(cluster: Cluster, namespace: str) -> dict[str, str] | None:
    """The labels a namespace has in the cluster (None when this cluster does not render it)."""
    rendered = cluster.namespaces.get(namespace)
    if rendered is None:
        return None
    return {**rendered.labels, NAME_LABEL: namespace}


QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def raw_quota_fields(spec: dict) -> Iterator[tuple[tuple, str, str, object]]:
    """(path under spec, resource name, field, raw value) of every quota field of a ClusterQueue or Cohort spec,
    read from the body as written (the model has parsed the values already); wrong shapes are skipped (the
    schema stage reports them)."""
    groups = spec.get("resourceGroups")
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        flavors = group.get("flavors") if isinstance(group, dict) else None
        for f, flavor in enumerate(flavors if isinstance(flavors, list) else []):
            resources = flavor.get("resources") if isinstance(flavor, dict) else None
            for r, resource in enumerate(resources if isinstance(resources, list) else []):
                for field in QUOTA_FIELDS if isinstance(resource, dict) else ():
                    if field in resource:
                        path = ("resourceGroups", g, "flavors", f, "resources", r)
                        yield path, str(resource.get("name", "")), field, resource[field]


def quota_owners(cluster: Cluster) -> list[K8sObject]:
    """Every ClusterQueue object, then every Cohort object, of the cluster."""
    owners: list[K8sObject] = [q.obj for q in cluster.cluster_queues.values()]
    return owners + [c.obj for c in cluster.cohorts.values() if c.obj is not None]


def group_owners(cluster: Cluster) -> list[tuple[str, str, K8sObject, tuple[ResourceGroup, ...]]]:
    """(kind, name, object, resource groups) of every ClusterQueue and Cohort object."""
    owners = [("ClusterQueue", n, cq.obj, cq.resource_groups) for n, cq in sorted(cluster.cluster_queues.items())]
    owners += [("Cohort", n, c.obj, c.resource_groups) for n, c in sorted(cluster.cohorts.items())
               if c.obj is not None]
    return owners
