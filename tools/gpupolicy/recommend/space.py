"""The search space of `recommend`: knobs on a cluster's ClusterQueues, and the policy a candidate simulates.

Knobs (each names a ClusterQueue and, for limits, a flavor and its GPU resource):
- `<queue>/<flavor>/<resource>/borrow`: the GPU borrowingLimit, 0 .. what the flavor's pools expose beyond the
  queue's nominal quota;
- `<queue>/<flavor>/<resource>/lend`: the GPU lendingLimit, 0 .. the queue's nominal quota;
- `<queue>/cohort`: which of the cluster's non-production cohorts the queue joins, in a flat fleet and in a
  cohort tree alike: the engine lends through the whole tree as Kueue does (simulate/quota.py, decision 0054),
  so it judges a move by what the queue can borrow in the new place (decision 0058).
Queues of the production tier are left as they are: their reserve is what CAP005 protects. Nominal quotas,
MIG layouts and time-slicing replicas are not searched (docs/decisions/0044-recommend-search-method.md says why).

A candidate is simulated by rebuilding the cluster's ClusterQueues with the knob values and handing the result to
`simulate.policy.from_cluster`, so the simulated policy comes from the same code as `gpupolicy simulate`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..model import Cluster, ClusterQueue, ResourceGroup
from ..quotas import flavor_capacity, is_gpu_resource
from ..simulate.policy import SimPolicy, from_cluster

PRODUCTION = "production"
BORROW, LEND, COHORT = "borrow", "lend", "cohort"


@dataclass(frozen=True)
class Knob:
    name: str  # the Optuna parameter name
    queue: str
    kind: str  # borrow | lend | cohort
    current: int | str
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()
    flavor: str = ""
    resource: str = ""


def knobs(cluster: Cluster) -> list[Knob]:
    """Every knob of the cluster, in a stable order (the order Optuna samples them in)."""
    found: list[Knob] = []
    searched = [cq for _, cq in sorted(cluster.cluster_queues.items()) if cq.tier != PRODUCTION and cq.cohort]
    cohorts = tuple(sorted({cq.cohort for cq in searched}))
    movable = len(cohorts) > 1
    for cq in searched:
        if movable:
            found.append(Knob(f"{cq.name}/cohort", cq.name, COHORT, cq.cohort, choices=cohorts))
        for flavor, quota in _gpu_quotas(cq):
            exposed = int(flavor_capacity(cluster, flavor).get(quota.name, 0))
            nominal = int(quota.nominal)
            borrow = _whole(quota.borrowing_limit, exposed - nominal)
            found.append(Knob(f"{cq.name}/{flavor}/{quota.name}/{BORROW}", cq.name, BORROW, borrow, 0,
                              max(exposed - nominal, borrow), flavor=flavor, resource=quota.name))
            if nominal > 0:
                lend = _whole(quota.lending_limit, nominal)
                found.append(Knob(f"{cq.name}/{flavor}/{quota.name}/{LEND}", cq.name, LEND, lend, 0,
                                  max(nominal, lend), flavor=flavor, resource=quota.name))
    return found


def _gpu_quotas(cq: ClusterQueue):
    """(flavor, quota) of the GPU resource each flavor actually holds: the one with quota or a borrowing limit
    (a MIG flavor lists nvidia.com/gpu at 0 beside its mig-* resource)."""
    for group in cq.resource_groups:
        for fq in group.flavors:
            held = [q for q in fq.resources if is_gpu_resource(q.name) and (q.nominal or q.borrowing_limit)]
            if len(held) == 1 and _finite(held[0]):
                yield fq.flavor, held[0]


def _finite(quota) -> bool:
    return all(isinstance(v, int) or (isinstance(v, float) and v.is_integer())
               for v in (quota.nominal, quota.borrowing_limit, quota.lending_limit) if v is not None)


def _whole(limit: int | float | None, unlimited: int) -> int:
    return max(unlimited, 0) if limit is None else int(limit)


def current_values(knob_list: list[Knob]) -> dict[str, int | str]:
    return {knob.name: knob.current for knob in knob_list}


def changes(knob_list: list[Knob], params: Mapping[str, int | str]) -> list[tuple[Knob, int | str]]:
    """The knobs whose value differs from the repository's, with the new value."""
    return [(knob, params[knob.name]) for knob in knob_list if knob.name in params and params[knob.name] != knob.current]


def with_params(cluster: Cluster, knob_list: list[Knob], params: Mapping[str, int | str]) -> Cluster:
    """A shallow copy of the cluster whose ClusterQueues carry the knob values (the model is never mutated)."""
    queues = dict(cluster.cluster_queues)
    for knob, value in changes(knob_list, params):
        queues[knob.queue] = _changed(queues[knob.queue], knob, value)
    return dataclasses.replace(cluster, cluster_queues=queues, derived={})


def _changed(cq: ClusterQueue, knob: Knob, value: int | str) -> ClusterQueue:
    if knob.kind == COHORT:
        return dataclasses.replace(cq, cohort=str(value))
    field = "borrowing_limit" if knob.kind == BORROW else "lending_limit"
    groups = []
    for group in cq.resource_groups:
        flavors = []
        for fq in group.flavors:
            if fq.flavor == knob.flavor:
                fq = dataclasses.replace(fq, resources=tuple(
                    dataclasses.replace(q, **{field: value}) if q.name == knob.resource else q
                    for q in fq.resources))
            flavors.append(fq)
        groups.append(ResourceGroup(group.covered_resources, tuple(flavors)))
    return dataclasses.replace(cq, resource_groups=tuple(groups))


def candidate_policy(cluster: Cluster, knob_list: list[Knob], params: Mapping[str, int | str],
                     placement: str = "frag-aware") -> SimPolicy:
    return from_cluster(with_params(cluster, knob_list, params), placement)
