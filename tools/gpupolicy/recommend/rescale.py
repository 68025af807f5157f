"""GPU quota in new units: the one arithmetic the replica knob (space.with_replicas) and the MIG split
(mig_split.with_split) share, and the names of a quota's limit fields in the model and in YAML.

Rounding down keeps CAP001 (the sum of floors is at most the floor of the sum, so quotas that fit the pool
still fit) and CAP010 (a lending limit at most its nominal quota stays so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..domain.gpu_resources import is_nvidia_resource
from ..model import Cluster, ResourceGroup

# model.ResourceQuota's limit attribute -> its key in a ClusterQueue's or Cohort's YAML (pipeline/build.py)
QUOTA_KEYS = {"nominal": "nominalQuota", "borrowing_limit": "borrowingLimit", "lending_limit": "lendingLimit"}


def rescaled(amount, old: int, new: int):
    """A whole quota at `new` units (replicas, nodes) instead of `old`, rounded down; other values stay."""
    if isinstance(amount, float) and amount.is_integer():
        amount = int(amount)
    return amount * new // old if isinstance(amount, int) else amount


def with_rescaled_quotas(cluster: Cluster, scale: Mapping[str, tuple[int, int]]) -> Cluster:
    """The cluster with every ClusterQueue's and Cohort's GPU quota on a flavor of `scale` rescaled
    (production's too: the same cards in new units); derived facts dropped, the model never mutated."""
    queues = {
        name: dataclasses.replace(cq, resource_groups=rescaled_groups(cq.resource_groups, scale))
        for name, cq in cluster.cluster_queues.items()
    }
    cohorts = {
        name: dataclasses.replace(c, resource_groups=rescaled_groups(c.resource_groups, scale))
        for name, c in cluster.cohorts.items()
    }
    return dataclasses.replace(cluster, cluster_queues=queues, cohorts=cohorts, derived={})


def rescaled_groups(
    groups: tuple[ResourceGroup, ...], scale: Mapping[str, tuple[int, int]]
) -> tuple[ResourceGroup, ...]:
    """The resource groups with every GPU quota field on a flavor of `scale` (flavor -> (old, new) units)
    rescaled."""

    def quota(q, old: int, new: int):
        if not is_nvidia_resource(q.name):
            return q
        fields = {f: rescaled(getattr(q, f), old, new) for f in QUOTA_KEYS if getattr(q, f) is not None}
        return dataclasses.replace(q, **fields)

    return tuple(
        ResourceGroup(
            g.covered_resources,
            tuple(
                dataclasses.replace(fq, resources=tuple(quota(q, *scale[fq.flavor]) for q in fq.resources))
                if fq.flavor in scale
                else fq
                for fq in g.flavors
            ),
        )
        for g in groups
    )
