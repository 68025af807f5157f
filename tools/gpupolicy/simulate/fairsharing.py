"""Kueue's fair sharing: the dominant resource share (DRS) of a ClusterQueue or Cohort, and the order in which
the scheduler takes the queues' heads when fair sharing is on.

Read against kubernetes-sigs/kueue v0.19.2:
- apis/config/v1beta2/configuration_types.go `FairSharing` and pkg/scheduler/preemption/fairsharing/
  strategy.go `Enabled`: a v1beta2 Configuration turns fair sharing on by carrying a `fairSharing` block (a
  v1beta1 one with `enable: true`, apis/config/v1beta1/configuration_conversion.go). A v1beta2 block must
  list its `preemptionStrategies` as one of three sets or Kueue does not start (pkg/config/validation.go:
  domain/kueue_configuration.py `refusals`, rule WL015; policy.from_cluster refuses to replay it); a
  v1beta1 one without them gets LessThanOrEqualToFinalShare then LessThanInitialShare;
- pkg/cache/scheduler/fair_sharing.go: `dominantResourceShare` (per resource name, what the node uses above
  its subtree quota, summed over flavors, per mille of what its parent could lend, `calculateLendable`; the
  largest ratio, over the node's `fairSharing.weight`, default 1), `CompareDRS` (a zero weight that borrows
  ranks above every other share);
- pkg/scheduler/fair_sharing_iterator.go: `runTournament` and `entryComparer.less` (with the v0.19.2 default
  gates FairSharingPrioritizeNonBorrowing and PrioritySortingWithinCohort on, PrioritizePreemptorWorkloads
  off): at every cohort of the tree, the child whose share, with its nominated workload admitted, is lowest
  goes first; a child not borrowing on the workload's flavors before one that is; then priority, then queue
  order time.

Amounts are the simulator's milli-units per quota key (resources.py); a key's `unit` turns them back into the
unit Kueue counts its resource in (a time-sliced card's replicas, a single-strategy MIG card's instances), so
shares summed over flavors compare as Kueue's do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..domain.quantity import QuantityError, parse_quantity
from ..model import GPU_RESOURCE
from .jobs import mig_card
from .resources import bucket_key

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
DEFAULT_WEIGHT = 1.0


@dataclass(frozen=True)
class FairSharing:
    """Kueue's `fairSharing` as the scheduler applies it, with the feature gates that change it."""

    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    prioritize_non_borrowing: bool = True  # FairSharingPrioritizeNonBorrowing (beta, on)
    preempt_within_nominal: bool = True  # FairSharingPreemptWithinNominal (beta, on)
    priority_sorting: bool = True  # PrioritySortingWithinCohort (beta, on)


def from_configuration(config: Any) -> FairSharing | None:
    """The fair sharing a Kueue Configuration (a mapping) turns on, None when it is off."""
    if not isinstance(config, dict):
        return None
    block = config.get("fairSharing")
    if not isinstance(block, dict):
        return None
    if str(config.get("apiVersion", "")).endswith("/v1beta1") and block.get("enable") is not True:
        return None
    listed = block.get("preemptionStrategies")
    strategies = (
        tuple(s for s in listed if s in DEFAULT_STRATEGIES) if isinstance(listed, list) else ()
    ) or DEFAULT_STRATEGIES
    gates = config.get("featureGates") if isinstance(config.get("featureGates"), dict) else {}
    return FairSharing(
        strategies=strategies,
        prioritize_non_borrowing=gates.get("FairSharingPrioritizeNonBorrowing") is not False,
        preempt_within_nominal=gates.get("FairSharingPreemptWithinNominal") is not False,
        priority_sorting=gates.get("PrioritySortingWithinCohort") is not False,
    )


def weight(spec: Any) -> float:
    """A ClusterQueue's or Cohort's `spec.fairSharing.weight` (a quantity; 1 when absent, `parseFairWeight`);
    a weight that is not a quantity, which the API server refuses, counts as the default."""
    block = spec.get("fairSharing") if isinstance(spec, dict) else None
    if not isinstance(block, dict) or block.get("weight") is None:
        return DEFAULT_WEIGHT
    try:
        value = float(parse_quantity(block["weight"]))
    except QuantityError:
        return DEFAULT_WEIGHT
    return value if value >= 0 else DEFAULT_WEIGHT


@dataclass(frozen=True, slots=True)
class Share:
    """A node's DRS (fair_sharing.go `DRS`): per-mille ratio, weight, and the quota keys it borrows on."""

    weight: float
    ratio: float = 0.0
    borrowing: bool = False
    borrowed: frozenset = frozenset()

    @property
    def value(self) -> float:
        """`PreciseWeightedShare`."""
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def borrowing_on(self, keys: Iterable[str]) -> bool:
        """`IsBorrowingOn`: it borrows on one of `keys`."""
        return any(key in self.borrowed for key in keys)


NEGATIVE = Share(DEFAULT_WEIGHT, -1.0)  # `NegativeDRS`: below every share


def compare(a: Share, b: Share) -> int:
    """`CompareDRS`: -1 when `a` is the lower share (preferred for scheduling), 1 when higher."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    va, vb = a.value, b.value
    return (va > vb) - (va < vb)


class Shares:
    """Dominant resource shares over a QuotaTree (quota.py), whose usage the caller keeps current.

    `units`: quota key -> (resource name, factor turning its milli-units into the milli-units of that resource
    Kueue counts); `weights`: (is a queue, name) -> fair weight; `parents`: (is a queue, name) -> parent
    cohort name ("" for a root)."""

    def __init__(
        self,
        tree,
        units: Mapping[str, tuple[str, float]],
        weights: Mapping[tuple[bool, str], float],
        parents: Mapping[tuple[bool, str], str],
    ) -> None:
        self.tree, self.units, self.weights, self.parents = tree, units, weights, parents
        self.nodes: dict[tuple[bool, str], list] = {}  # (is a queue, name) -> its Node under every key
        for node in tree.nodes():
            self.nodes.setdefault((node.is_queue, node.name), []).append(node)
        self.lendables: dict[str, dict[str, float]] = {}  # cohort -> resource -> lendable (reads no usage)

    def share(self, is_queue: bool, name: str) -> Share:
        """`dominantResourceShare` of the queue or cohort as its usage stands."""
        who = (is_queue, name)
        weight = self.weights.get(who, DEFAULT_WEIGHT)
        parent = self.parents.get(who, "")
        if not parent:
            return Share(weight)
        borrowed: dict[str, float] = {}
        keys = []
        for node in self.nodes.get(who, ()):
            above = node.usage - node.subtree
            if above > 0:
                resource, unit = self.units.get(node.key, (GPU_RESOURCE, 1.0))
                borrowed[resource] = borrowed.get(resource, 0.0) + above * unit
                keys.append(node.key)
        if not borrowed:
            return Share(weight)
        lendable = self._lendable(parent)
        ratio = 0.0
        for resource, amount in borrowed.items():
            if lendable.get(resource, 0) > 0:
                ratio = max(ratio, amount * 1000.0 / lendable[resource])
        return Share(weight, ratio, True, frozenset(keys))

    def root(self, is_queue: bool, name: str) -> str:
        """The root cohort above a queue or cohort (a root cohort is its own; "" for a queue without one)."""
        cohort = self.parents.get((True, name), "") if is_queue else name
        while cohort and self.parents.get((False, cohort)):
            cohort = self.parents[(False, cohort)]
        return cohort

    def _lendable(self, cohort: str) -> dict[str, float]:
        """`calculateLendable`: per resource name, what `cohort` could lend at most (potentialAvailable) over
        every quota key of its root's tree."""
        found = self.lendables.get(cohort)
        if found is None:
            found = {}
            for root_node in self.nodes.get((False, self.root(False, cohort)), ()):
                key = root_node.key
                resource, unit = self.units.get(key, (GPU_RESOURCE, 1.0))
                found[resource] = found.get(resource, 0.0) + self._potential(cohort, key) * unit
            self.lendables[cohort] = found
        return found

    def _potential(self, cohort: str, key: str) -> int:
        """`potentialAvailable` of `cohort` under `key`; a cohort with no node there (nothing under it asks
        for the key) has no quota of its own in it and passes on its parent's."""
        while cohort:
            node = self.tree.cohort_nodes.get((cohort, key))
            if node is not None:
                return node.reach
            cohort = self.parents.get((False, cohort), "")
        return 0


def shares_for(policy, tree) -> Shares:
    """The Shares of a SimPolicy (policy.py) over its QuotaTree."""
    units: dict[str, tuple[str, float]] = {}
    owners = [*policy.queues.values(), *policy.cohorts.values()]
    for owner in owners:
        for fq in owner.flavors:
            for name, *_ in fq.resources:  # a MIG pool replayed per layout: instances, one key per resource
                units[bucket_key(fq.flavor, name)] = (name, 1.0)
            if not fq.resources:
                units[fq.flavor] = _gpu_unit(fq, policy.pools[fq.pool])
    weights = {(True, q.name): q.fair_weight for q in policy.queues.values()}
    weights |= {(False, c.name): c.fair_weight for c in policy.cohorts.values()}
    parents = {(True, q.name): q.cohort for q in policy.queues.values()}
    parents |= {(False, c.name): c.parent for c in policy.cohorts.values()}
    parents |= {
        (False, q.cohort): "" for q in policy.queues.values() if q.cohort and (False, q.cohort) not in parents
    }
    return Shares(tree, units, weights, parents)


def _gpu_unit(fq, pool) -> tuple[str, float]:
    """The resource a flavor's single GPU bucket counts and what one of its milli-GPUs is in Kueue's unit of
    it: a time-sliced card's milli-GPU is `replicas` milli-replicas, a single-strategy MIG card's one
    milli-instance per compute slice. MIG profiles summed into one bucket (a layout not replayed) count as
    one resource, where Kueue counts each profile apart."""
    names = tuple(sorted(fq.gpu_names))
    resource = GPU_RESOURCE if not names or GPU_RESOURCE in names else "+".join(names)
    if pool.sharing == "time-sliced":
        return resource, float(max(pool.replicas, 1))
    if pool.sharing == "mig" and resource == GPU_RESOURCE:
        return resource, float(mig_card(pool.model).compute_slices)
    return resource, 1.0


@dataclass(frozen=True, slots=True)
class Head:
    """A queue's head as the scheduler's tournament weighs it: the quota key and amount its flavor assignment
    charges ("" when no flavor admits it now), its priority and its queue order time (with a tie-break)."""

    queue: str
    key: str
    amount: int
    priority: int
    timestamp: tuple


class Tournament:
    """The order in which the scheduler takes the queues' heads with fair sharing on
    (fair_sharing_iterator.go `fairSharingIterator`)."""

    def __init__(self, shares: Shares, fair: FairSharing) -> None:
        self.shares, self.fair = shares, fair
        self.cohorts: dict[str, list[str]] = {}  # cohort -> its child cohorts
        self.queues: dict[str, list[str]] = {}  # cohort -> its ClusterQueues
        for (is_queue, name), parent in sorted(shares.parents.items()):
            if parent:
                (self.queues if is_queue else self.cohorts).setdefault(parent, []).append(name)

    def next(self, heads: Mapping[str, Head]) -> str:
        """The queue whose head goes next (`pop`). Kueue starts from any queue's root; here the root of the
        head first in priority and queue order, so that a replay is reproducible. A head no flavor admits
        changes nothing when tried, so it goes first."""
        for name, head in heads.items():
            if not head.key:
                return name
        first = min(heads.values(), key=lambda h: (-h.priority, h.timestamp, h.queue))
        root = self.shares.root(True, first.queue)
        if not root:
            return first.queue
        values = self._values(root, heads)
        winner = self._run(root, heads, values)
        return winner.queue if winner is not None else first.queue

    def _values(self, root: str, heads: Mapping[str, Head]) -> dict[tuple[str, str], Share]:
        """`computeDRS`: per (cohort, queue), the share of the queue's side of that cohort (the queue itself
        at its parent, then each ancestor at the next) with the head's usage added."""
        shares, parents, tree = self.shares, self.shares.parents, self.shares.tree
        values: dict[tuple[str, str], Share] = {}
        for name, head in heads.items():
            if self.shares.root(True, name) != root:
                continue
            tree.shift(name, head.key, head.amount)
            current = shares.share(True, name)
            cohort = parents.get((True, name), "")
            while cohort:
                values[(cohort, name)] = current
                current = shares.share(False, cohort)
                cohort = parents.get((False, cohort), "")
            tree.shift(name, head.key, -head.amount)
        return values

    def _run(self, cohort: str, heads: Mapping[str, Head], values) -> Head | None:
        """`runTournament`: the head each child nominates, the best of them at this cohort."""
        candidates = [
            found for child in self.cohorts.get(cohort, ()) if (found := self._run(child, heads, values))
        ]
        candidates += [heads[name] for name in self.queues.get(cohort, ()) if name in heads]
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if self._less(current, best, cohort, values):
                best = current
        return best

    def _less(self, a: Head, b: Head, cohort: str, values) -> bool:
        """`entryComparer.less`."""
        share_a, share_b = values[(cohort, a.queue)], values[(cohort, b.queue)]
        if self.fair.prioritize_non_borrowing:
            borrows_a, borrows_b = share_a.borrowing_on((a.key,)), share_b.borrowing_on((b.key,))
            if borrows_a != borrows_b:
                return not borrows_a
        order = compare(share_a, share_b)
        if order:
            return order < 0
        if self.fair.priority_sorting and a.priority != b.priority:
            return a.priority > b.priority
        return a.timestamp < b.timestamp
