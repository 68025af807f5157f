"""Kueue's preemption with fair sharing on: which workloads a workload preempts to fit its flavor.

Read against kubernetes-sigs/kueue v0.19.2, pkg/scheduler/preemption/:
- preemption.go `fairPreemptions`: the candidates (`findCandidates`: the preemptor's own queue under
  `withinClusterQueue`; under `reclaimWithinCohort`, every queue of its root cohort's tree that borrows on the
  flavor), sorted by `CandidatesOrdering`; the incoming workload's usage added while shares are compared;
  `runFirstFsStrategy` (an own-queue candidate is always taken; while the preemptor stays within its nominal
  quota, FairSharingPreemptWithinNominal, any candidate is; otherwise a candidate passes the first strategy
  or waits for the second), `runSecondFsStrategy` (rule S2-b, one candidate per queue) and
  `fillBackWorkloads`; `workloadFitsForFairSharing` (the request fits what is available, borrowing allowed);
- fairsharing/ordering.go `TargetClusterQueueOrdering`: from the root down, the child with the highest share
  (a cohort before a queue on a tie; between queues, the one whose first candidate `CandidatesOrdering` puts
  first), pruning queues that have no candidate left or do not borrow, and cohorts that do not borrow and
  do not hold the preemptor;
- fairsharing/target.go and least_common_ancestor.go: the preemptor's and the target's shares are those of
  their sides of the lowest cohort they share (the "almost least common ancestors");
- fairsharing/strategy.go: LessThanOrEqualToFinalShare (S2-a, the preemptor's share with its workload at
  most the target's once the candidate is gone) and LessThanInitialShare (S2-b, below the target's share
  as it is).
`fsStrategyUnsatisfiable` is not repeated: it skips evaluations that fail anyway.
"""

from __future__ import annotations

from collections.abc import Iterator

from .admission import (
    FAIR_SHARING,
    RECLAIM_WITHOUT_BORROWING,
    WITHIN_CQ,
    Candidate,
    Workload,
    ordering_key,
    preemptible,
)
from .fairsharing import (
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    NEGATIVE,
    FairSharing,
    Share,
    Shares,
    compare,
)
from .quota import Node, available


def _passes(strategy: str, preemptor_new: Share, target_old: Share, target_new: Share) -> bool:
    if strategy == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return compare(preemptor_new, target_new) <= 0
    if strategy == LESS_THAN_INITIAL_SHARE:
        return compare(preemptor_new, target_old) < 0
    return False


class FairPreemption:
    """`targets` for Admission (admission.py) when the Configuration turns fair sharing on."""

    def __init__(self, fair: FairSharing, shares: Shares, holding) -> None:
        self.fair, self.shares, self.tree, self.holding = fair, shares, shares.tree, holding

    def targets(self, queue, incoming: Workload) -> tuple[Candidate, ...] | None:
        """The workloads whose eviction lets `incoming` fit its flavor, or None when no set does."""
        key, total = incoming.flavor, incoming.total
        leaf = self.tree.leaves[(queue.name, key)]
        candidates = self._candidates(queue, incoming, leaf)
        if not candidates:
            return None
        candidates.sort(key=lambda w: ordering_key(w, queue.name))
        search = _Search(self, leaf, total)
        self.tree.shift(queue.name, key, total)  # the shares count the incoming workload as admitted
        try:
            fits, retry = self._first(search, candidates)
            if not fits and len(self.fair.strategies) > 1:
                fits = self._second(search, retry)
        finally:
            self.tree.shift(queue.name, key, -total)
        try:
            return tuple(Candidate(w, variant, None) for w, variant in search.fill_back()) if fits else None
        finally:
            search.restore()

    def _candidates(self, queue, incoming: Workload, leaf: Node) -> list[Workload]:
        """`findCandidates`."""
        key = incoming.flavor
        found: list[Workload] = []
        if queue.within_queue != "Never":
            found += [
                w
                for w in preemptible(queue.within_queue, incoming, self.holding(queue.name, key))
                if w.index != incoming.index
            ]
        if leaf.parent is not None and queue.reclaim != "Never":
            for other in queues_under(root_of(leaf)):
                if other is not leaf and other.usage > other.nominal:  # cqIsBorrowing
                    found += preemptible(queue.reclaim, incoming, self.holding(other.name, key))
        return found

    def _first(self, search: _Search, candidates: list[Workload]) -> tuple[bool, list[Workload]]:
        """`runFirstFsStrategy`: (fits, the candidates left for the second strategy)."""
        strategy = self.fair.strategies[0]
        leaf = search.leaf
        ordering = _Targets(self, leaf, candidates)
        within_nominal = self.fair.preempt_within_nominal and leaf.usage <= leaf.nominal
        retry: list[Workload] = []
        for target in ordering:
            if target is leaf or within_nominal:
                search.take(ordering.pop(target), WITHIN_CQ if target is leaf else RECLAIM_WITHOUT_BORROWING)
                if search.fits():
                    return True, []
                continue
            preemptor_new, target_old = ordering.shares_of(target)
            while ordering.has(target):
                workload = ordering.pop(target)
                target_new = ordering.share_without(target, workload)
                if _passes(strategy, preemptor_new, target_old, target_new):
                    search.take(workload, FAIR_SHARING)
                    if search.fits():
                        return True, []
                    break  # the shares changed: the ordering picks the next queue again
                retry.append(workload)
        return False, retry

    def _second(self, search: _Search, retry: list[Workload]) -> bool:
        """`runSecondFsStrategy` (rule S2-b): at most one candidate per queue."""
        ordering = _Targets(self, search.leaf, retry)
        for target in ordering:
            preemptor_new, target_old = ordering.shares_of(target)
            workload = ordering.pop(target)
            if _passes(LESS_THAN_INITIAL_SHARE, preemptor_new, target_old, target_old):
                search.take(workload, FAIR_SHARING)
                if search.fits():
                    return True
            ordering.drop(target)
        return False


class _Search:
    """The workloads a search took out of the quota tree, in order, and the preemptor's request."""

    def __init__(self, owner: FairPreemption, leaf: Node, total: int) -> None:
        self.tree, self.leaf, self.total = owner.tree, leaf, total
        self.taken: list[tuple[Workload, int]] = []  # (workload, variant)
        self.out: dict[int, Workload] = {}  # index -> workload whose usage is out of the tree now

    def take(self, workload: Workload, variant: int) -> None:
        self.taken.append((workload, variant))
        self._remove(workload)

    def fits(self) -> bool:
        """`workloadFitsForFairSharing`: with the incoming workload's own usage out again."""
        self.tree.shift(self.leaf.name, self.leaf.key, -self.total)
        fits = self.total <= available(self.leaf)
        self.tree.shift(self.leaf.name, self.leaf.key, self.total)
        return fits

    def fill_back(self) -> list[tuple[Workload, int]]:
        """`fillBackWorkloads` (borrowing allowed): last first, put back every target it fits without."""
        targets = list(self.taken)
        for i in range(len(targets) - 2, -1, -1):
            self._add(targets[i][0])
            if self.total <= available(self.leaf):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self._remove(targets[i][0])
        return targets

    def restore(self) -> None:
        for workload in list(self.out.values()):
            self._add(workload)

    def _remove(self, workload: Workload) -> None:
        self.tree.shift(workload.queue, workload.flavor, -workload.total)
        self.out[workload.index] = workload

    def _add(self, workload: Workload) -> None:
        self.tree.shift(workload.queue, workload.flavor, workload.total)
        del self.out[workload.index]


class _Targets:
    """`TargetClusterQueueOrdering` over one quota key's tree: iterating yields the next queue (its leaf) to
    take a candidate from, chosen again at every step from the shares as they stand."""

    def __init__(self, owner: FairPreemption, preemptor: Node, candidates: list[Workload]) -> None:
        self.shares, self.preemptor = owner.shares, preemptor
        self.key = preemptor.key
        self.by_queue: dict[str, list[Workload]] = {}
        for workload in candidates:  # in CandidatesOrdering, which each queue's list keeps
            self.by_queue.setdefault(workload.queue, []).append(workload)
        self.ancestors: set[int] = set()
        node = preemptor.parent
        while node is not None:
            self.ancestors.add(id(node))
            node = node.parent
        self.pruned: set[int] = set()

    def __iter__(self) -> Iterator[Node]:
        leaf = self.preemptor
        if leaf.parent is None:
            while id(leaf) not in self.pruned and self.has(leaf):
                yield leaf
            return
        root = root_of(leaf)
        while id(root) not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def has(self, leaf: Node) -> bool:
        return bool(self.by_queue.get(leaf.name))

    def pop(self, leaf: Node) -> Workload:
        return self.by_queue[leaf.name].pop(0)

    def drop(self, leaf: Node) -> None:
        self.pruned.add(id(leaf))

    def _share(self, node: Node) -> Share:
        return self.shares.share(node.is_queue, node.name)

    def _next(self, cohort: Node) -> Node | None:
        """`nextTarget`."""
        best_queue, best_queue_share = None, NEGATIVE
        for child in cohort.children:
            if not child.is_queue or id(child) in self.pruned:
                continue
            share = self._share(child)
            if (not share.borrowing and child is not self.preemptor) or not self.has(child):
                self.pruned.add(id(child))
            elif (order := compare(share, best_queue_share)) == 0:
                mine, theirs = self.by_queue[child.name][0], self.by_queue[best_queue.name][0]
                if ordering_key(mine, self.preemptor.name) < ordering_key(theirs, self.preemptor.name):
                    best_queue = child
            elif order > 0:
                best_queue, best_queue_share = child, share
        best_cohort, best_cohort_share = None, NEGATIVE
        for child in cohort.children:
            if child.is_queue or id(child) in self.pruned:
                continue
            share = self._share(child)
            if not share.borrowing and id(child) not in self.ancestors:
                self.pruned.add(id(child))
            elif compare(share, best_cohort_share) >= 0:
                best_cohort, best_cohort_share = child, share
        if best_cohort is None and best_queue is None:
            self.pruned.add(id(cohort))
            return None
        if compare(best_cohort_share, best_queue_share) >= 0:
            return self._next(best_cohort)
        return best_queue

    def _almost_lcas(self, target: Node) -> tuple[Node, Node]:
        """The preemptor's and the target's sides of the lowest cohort they share."""
        side, node = target, target.parent
        while id(node) not in self.ancestors:
            side, node = node, node.parent
        mine = self.preemptor
        while mine.parent is not node:
            mine = mine.parent
        return mine, side

    def shares_of(self, target: Node) -> tuple[Share, Share]:
        """`ComputeShares`: the preemptor's side's share (its workload in) and the target's side's."""
        mine, theirs = self._almost_lcas(target)
        return self._share(mine), self._share(theirs)

    def share_without(self, target: Node, workload: Workload) -> Share:
        """`ComputeTargetShareAfterRemoval`."""
        tree = self.shares.tree
        tree.shift(workload.queue, workload.flavor, -workload.total)
        try:
            return self._share(self._almost_lcas(target)[1])
        finally:
            tree.shift(workload.queue, workload.flavor, workload.total)


def root_of(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def queues_under(node: Node) -> Iterator[Node]:
    """`SubtreeClusterQueues`."""
    for child in node.children:
        if child.is_queue:
            yield child
        else:
            yield from queues_under(child)
