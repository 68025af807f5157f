"""Shared helpers of the capacity and quota rules (CAP*): how a quota reads in a message, label selectors,
namespaces and the raw quota fields. Not a rule (no `ID`). The quota arithmetic itself (entries, the flavor ->
pool join, the capacity a flavor stands for, what a cohort lends) lives in `gpupolicy.domain.quotas`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..model import Cluster, ClusterQueue, K8sObject, Pool, ResourceGroup
from ..model.selectors import label_selector_matches

# The `Pool.sharing` modes whose devices are fractions of a GPU
SHARED_MODES = ("time-sliced", "mps", "mig")


def shared_pool(pool: Pool) -> bool:
    """A pool whose devices are fractions of a GPU: time-sliced, MPS or MIG."""
    return pool.sharing in SHARED_MODES


# --- label selectors (metav1.LabelSelector)
# ------------------------------------------------------------------


def selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """A ClusterQueue's namespaceSelector: None selects nothing, {} everything."""
    return selector is not None and label_selector_matches(selector, labels)


def queues_selecting(cluster: Cluster, labels: dict[str, str]) -> list[ClusterQueue]:
    key = ("queues_selecting", tuple(sorted((str(k), str(v)) for k, v in labels.items())))
    # several rules ask this per namespace
    return cluster.memo(
        key,
        lambda: [
            cq
            for _, cq in sorted(cluster.cluster_queues.items())
            if selector_matches(cq.namespace_selector, labels)
        ],
    )


NAME_LABEL = "kubernetes.io/metadata.name"  # the API server sets it on every namespace


def namespace_labels(cluster: Cluster, namespace: str) -> dict[str, str] | None:
    """The labels a namespace has in the cluster (None when this cluster does not render it)."""
    rendered = cluster.namespaces.get(namespace)
    if rendered is None:
        return None
    return {**rendered.labels, NAME_LABEL: namespace}


QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def raw_quota_fields(spec: dict) -> Iterator[tuple[tuple, str, str, object]]:
    """(path under spec, resource name, field, raw value) of every quota field of a ClusterQueue or Cohort
    spec, read from the body as written (the model has parsed the values already); wrong shapes are skipped
    (the
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


def core_objects(cluster: Cluster, kind: str) -> Iterator[K8sObject]:
    """The cluster's core (`apiVersion: v1`) objects of `kind`, as rendered; unlike the model's lists (e.g.
    `namespace_quotas`) this keeps objects whose metadata the model could not type, so the rules that check
    amounts as written still see them."""
    return (obj for obj in cluster.objects if obj.api_version == "v1" and obj.kind == kind)


def hard_amounts(quota: K8sObject) -> Iterator[tuple[Any, object]]:
    """(resource name, raw amount) of a ResourceQuota's `spec.hard`; nothing when it is not a mapping."""
    hard = quota.spec.get("hard")
    yield from hard.items() if isinstance(hard, dict) else ()


def group_owners(cluster: Cluster) -> list[tuple[str, str, K8sObject, tuple[ResourceGroup, ...]]]:
    """(kind, name, object, resource groups) of every ClusterQueue and Cohort object."""
    owners = [
        ("ClusterQueue", n, cq.obj, cq.resource_groups) for n, cq in sorted(cluster.cluster_queues.items())
    ]
    owners += [
        ("Cohort", n, c.obj, c.resource_groups)
        for n, c in sorted(cluster.cohorts.items())
        if c.obj is not None
    ]
    return owners
