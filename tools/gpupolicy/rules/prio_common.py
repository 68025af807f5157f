"""Shared helpers of the priority rules (PRIO*): classes of both kinds, tiers and their value ranges."""

from __future__ import annotations

from collections.abc import Iterator

from ..model import TIERS, Cluster, PriorityClass, WorkloadPriorityClass

AnyClass = PriorityClass | WorkloadPriorityClass


def classes_of(cluster: Cluster) -> Iterator[tuple[str, list[AnyClass]]]:
    """(kind, classes) for PriorityClass and WorkloadPriorityClass: the ladder holds within each kind."""
    yield "PriorityClass", list(cluster.priority_classes.values())
    yield "WorkloadPriorityClass", list(cluster.workload_priority_classes.values())


def tier_values(cluster: Cluster) -> dict[str, list[int]]:
    """Every value a class of each tier has, over both kinds."""
    values: dict[str, list[int]] = {tier: [] for tier in TIERS}
    for _kind, classes in classes_of(cluster):
        for cls in classes:
            if cls.tier in values:
                values[cls.tier].append(cls.value)
    return values


def tier_rank(tier: str) -> int:
    """0 for production (highest) ... 3 for experiment; -1 when the tier is not one of TIERS."""
    return TIERS.index(tier) if tier in TIERS else -1
