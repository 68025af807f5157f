"""Kueue's admission of one workload on quota alone: the flavor it gets and the workloads it preempts.

Read against kubernetes-sigs/kueue (v1beta2 API):
- flavor assignment: pkg/scheduler/flavorassigner/flavorassigner.go `findFlavorForPodSets` with
  `fitsResourceQuota` (noFit above `PotentialAvailable`, fit within `Available`, else preemption when the
  queue's nominal quota holds the request or it may preempt while borrowing, `canPreemptWhileBorrowing`),
  `isPreferred` (borrowingOverPreemption: fit > reclaim > preempt > no candidates, then less borrowing) and
  `shouldTryNextFlavor` (flavorFungibility whenCanBorrow / whenCanPreempt);
- preemption targets: pkg/scheduler/preemption/preemption.go `classicalPreemptions` (the attempts with and
  without borrowing, `workloadFits`, `fillBackWorkloads`), classical/candidate_generator.go
  (`NewCandidateIterator`: evicted candidates first, then hierarchy, priority and same-queue candidates;
  `candidateIsValid`), classical/hierarchical_preemption.go (`classifyPreemptionVariant`,
  `isAboveBorrowingThreshold`), common/ordering.go `CandidatesOrdering` and common/preemption_policy.go
  `SatisfiesPreemptionPolicy`.
One resource per pod set (the accelerator it asks for: a flavor's GPU bucket, or on a MIG flavor the one
`nvidia.com/mig-*` resource its instance is, resources.py), one pod set per workload; a Workload's `flavor` is
that quota key. Topology-aware scheduling is not modelled, so
nothing here looks at nodes: a workload admitted on quota waits for nodes while holding it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .policy import FlavorQuota, SimQueue
from .quota import Node, QuotaTree, available, lowest_fitting_subtree, potential

# flavorassigner.go preemptionMode, in its order (higher is better)
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
# classical/hierarchical_preemption.go preemptionVariant
WITHIN_CQ, HIERARCHICAL, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(1, 5)
FAIR_SHARING = 5  # a fair-sharing preemption's strategy let it go (fair_preemption.py)
REASONS = {
    WITHIN_CQ: "InClusterQueue",
    HIERARCHICAL: "InCohortReclamation",
    RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
    RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing",
    FAIR_SHARING: "InCohortFairSharing",
}


@dataclass(frozen=True, slots=True)
class Workload:
    """What admission reads of a workload holding or asking for quota."""

    index: int
    queue: str
    flavor: str  # the quota key it holds (resources.bucket_key)
    total: int  # milli-units of that key
    priority: int
    submit: int  # queue order timestamp
    admitted: int = 0  # quota reservation time
    evicted: bool = False  # preempted, its pods still terminating: its quota is not free yet


@dataclass(frozen=True, slots=True)
class Candidate:
    workload: Workload
    variant: int
    lca: Node | None  # the subtree root it was collected under (None: the preemptor's own queue)


@dataclass(frozen=True, slots=True)
class Choice:
    flavor: FlavorQuota
    mode: int
    targets: tuple[Candidate, ...] = ()  # to evict before the workload fits (mode PREEMPT or RECLAIM)
    borrow: int = 0  # flavorassigner.go borrowingLevel: 0 within the queue's quota, else the subtree's height


AGE_POLICY = "LowerOrNewerEqualPriority"  # the one preemption policy that reads a workload's age


def satisfies(policy: str, preemptor: Workload, candidate: Workload) -> bool:
    """common/preemption_policy.go `SatisfiesPreemptionPolicy`."""
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == AGE_POLICY:
        return lower or (preemptor.priority == candidate.priority and preemptor.submit < candidate.submit)
    return policy == "Any"


def preemptible(policy: str, preemptor: Workload, holders: Iterable[Workload]) -> Iterable[Workload]:
    """The holders `policy` lets `preemptor` preempt (`satisfies`), without a call per holder under Any."""
    if policy == "Any":
        return holders
    return [w for w in holders if satisfies(policy, preemptor, w)]


def above_threshold(candidate: int, incoming: int, threshold: int | None) -> bool:
    """hierarchical_preemption.go `isAboveBorrowingThreshold`."""
    if candidate >= incoming:
        return True
    return threshold is not None and candidate > threshold


def ordering_key(workload: Workload, own_queue: str) -> tuple:
    """common/ordering.go `CandidatesOrdering`: evicted first, other ClusterQueues before the preemptor's own,
    lower priority first, most recent quota reservation first, then a stable tie-break."""
    return (
        not workload.evicted,
        workload.queue == own_queue,
        workload.priority,
        -workload.admitted,
        workload.index,
    )


# candidate_generator.go's groups, in the order it offers them
_HIERARCHY, _PRIORITY, _OWN = range(3)


class Admission:
    """Flavor assignment and preemption over a QuotaTree whose usage the caller keeps current;
    `holding(queue, flavor)` lists the workloads holding quota there. Preemption is classical unless `fair`
    (fair_preemption.FairPreemption) is given: Kueue's with fair sharing on."""

    def __init__(
        self,
        tree: QuotaTree,
        queues: dict[str, SimQueue],
        holding: Callable[[str, str], Iterable[Workload]],
        fair=None,
    ):
        self.tree, self.queues, self.holding, self.fair = tree, queues, holding, fair

    # -- flavorassigner.go ---------------------------------------------------------------------------------
    def assign(
        self, queue: SimQueue, incoming: Workload, requests: dict[str, tuple[str, int]]
    ) -> Choice | None:
        """The flavor Kueue assigns (`requests`: per flavor the workload can run on, the quota key it charges
        there and how much), None when no flavor admits it now (no fit, or preemption without candidates)."""
        best = self.best_flavor(queue, incoming, requests)
        if best is None or best.mode == NO_CANDIDATES:
            return None
        return best

    def best_flavor(
        self, queue: SimQueue, incoming: Workload, requests: dict[str, tuple[str, int]]
    ) -> Choice | None:
        """`findFlavorForPodSets`: the best flavor's Choice, a preemption without candidates included (Kueue's
        Preempt mode with no targets); None when no flavor fits at all (NoFit)."""
        best: Choice | None = None
        best_rank = (NO_FIT, 0)
        for flavor in queue.flavors:
            if flavor.flavor not in requests:
                continue
            key, total = requests[flavor.flavor]
            leaf = self.tree.leaves[(queue.name, key)]
            if total > potential(leaf):
                continue  # noFit: above the maximum capacity
            borrow, may_reclaim = lowest_fitting_subtree(leaf, total)  # fitsResourceQuota
            if total <= available(leaf):
                choice = Choice(flavor, FIT, borrow=borrow)
            elif leaf.nominal >= total or may_reclaim or self._may_preempt_while_borrowing(queue):
                mode, targets, borrow = self.simulate_preemption(queue, incoming, key, total, borrow)
                choice = Choice(flavor, mode, targets, borrow)
            else:
                continue
            rank = (choice.mode, -borrow)
            if not _try_next(choice.mode, borrow, queue):
                best, best_rank = choice, rank
                break
            if _preferred(rank, best_rank, queue.preference):
                best, best_rank = choice, rank
        return best

    def _may_preempt_while_borrowing(self, queue: SimQueue) -> bool:
        """flavorassigner.go `canPreemptWhileBorrowing`."""
        return queue.borrow_within == "LowerPriority" or (self.fair is not None and queue.reclaim != "Never")

    def simulate_preemption(
        self, queue: SimQueue, incoming: Workload, key: str, total: int, borrow: int
    ) -> tuple[int, tuple[Candidate, ...], int]:
        """preemption_oracle.go `SimulatePreemption`: NO_CANDIDATES, PREEMPT (a target in the queue itself) or
        RECLAIM, the targets, and the borrowing level once they are gone (`borrow`: the level before)."""
        leaf = self.tree.leaves[(queue.name, key)]
        wanted = Workload(incoming.index, queue.name, key, total, incoming.priority, incoming.submit)
        targets = self.targets(queue, wanted)
        if targets is None:
            return NO_CANDIDATES, (), borrow
        mode = RECLAIM if all(t.workload.queue != queue.name for t in targets) else PREEMPT
        if self._usage_after(leaf, targets) + total <= leaf.subtree:
            borrow = 0  # SimulatePreemption's borrowAfterPreemptions
        return mode, targets, borrow

    @staticmethod
    def _usage_after(leaf: Node, targets: tuple[Candidate, ...]) -> int:
        return leaf.usage - sum(t.workload.total for t in targets if t.workload.queue == leaf.name)

    # -- preemption.go -------------------------------------------------------------------------------------
    def targets(self, queue: SimQueue, incoming: Workload) -> tuple[Candidate, ...] | None:
        """`classicalPreemptions` (with fair sharing, `fairPreemptions`): the minimal set of workloads whose
        removal lets `incoming` fit its flavor, or None when no set does."""
        if self.fair is not None:
            return self.fair.targets(queue, incoming)
        flavor = incoming.flavor
        leaf = self.tree.leaves[(queue.name, flavor)]
        # candidate_generator.go: evicted candidates first, then by group (hierarchy, priority, own queue),
        # each group in CandidatesOrdering (`ordering_key`, whose own-queue flag the group stands for). Plain
        # tuples sorted once: a search may weigh every workload in the cohort, and most searches fail.
        ordered: list[tuple] = []
        if leaf.parent is not None and queue.reclaim != "Never":
            forbidden = queue.borrow_within != "LowerPriority"
            for name, advantage, lca in self.tree.cohort_candidates(queue.name, flavor, incoming.total):
                group = _HIERARCHY if advantage else _PRIORITY
                for w in preemptible(queue.reclaim, incoming, self.holding(name, flavor)):
                    if advantage:
                        variant = HIERARCHICAL
                    elif forbidden or above_threshold(w.priority, incoming.priority, queue.borrow_threshold):
                        variant = RECLAIM_WITHOUT_BORROWING
                    else:
                        variant = RECLAIM_WHILE_BORROWING
                    ordered.append((not w.evicted, group, w.priority, -w.admitted, w.index, w, variant, lca))
        if queue.within_queue != "Never":
            for w in preemptible(queue.within_queue, incoming, self.holding(queue.name, flavor)):
                if w.index != incoming.index:
                    ordered.append(
                        (not w.evicted, _OWN, w.priority, -w.admitted, w.index, w, WITHIN_CQ, None)
                    )
        groups = {entry[1] for entry in ordered}
        ordered.sort()  # the first five fields are unique (the index): workloads are never compared
        forbidden = queue.borrow_within != "LowerPriority"
        under_nominal = leaf.usage < leaf.nominal  # queueUnderNominalInResourcesNeedingPreemption
        if not groups - {_OWN} or (forbidden and not under_nominal):
            attempts = (True,)
        elif forbidden and _HIERARCHY not in groups:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for borrowing in attempts:
            found = self._attempt(queue, incoming, leaf, ordered, borrowing)
            if found is not None:
                return tuple(Candidate(w, variant, lca) for *_, w, variant, lca in found)
        return None

    def _attempt(
        self, queue: SimQueue, incoming: Workload, leaf: Node, ordered: list[tuple], borrowing: bool
    ) -> list[tuple] | None:
        removed: list[tuple] = []
        try:
            for entry in ordered:
                if not self._valid(entry[5], entry[6], entry[7], queue.name, borrowing):
                    continue
                self._remove(entry[5])
                removed.append(entry)
                if self._fits(leaf, incoming.total, borrowing):
                    return self._fill_back(removed, leaf, incoming.total, borrowing)
            return None
        finally:
            for entry in removed:
                self._add(entry[5])

    def _valid(self, workload: Workload, variant: int, lca: Node | None, own: str, borrowing: bool) -> bool:
        """candidate_generator.go `candidateIsValid`."""
        if workload.queue == own:
            return True
        if borrowing and variant == RECLAIM_WITHOUT_BORROWING:
            return False
        return self.tree.still_borrowing(workload.queue, workload.flavor, lca)

    def _fill_back(self, removed: list[tuple], leaf: Node, total: int, borrowing: bool) -> list[tuple]:
        """preemption.go `fillBackWorkloads`: put back, last first, every target the workload fits without."""
        targets = list(removed)
        for i in range(len(targets) - 2, -1, -1):
            self._add(targets[i][5])
            if self._fits(leaf, total, borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self._remove(targets[i][5])
        kept = {id(t) for t in targets}
        for entry in removed:  # the caller restores every removed one: re-remove those put back
            if id(entry) not in kept:
                self._remove(entry[5])
        return targets

    @staticmethod
    def _fits(leaf: Node, total: int, borrowing: bool) -> bool:
        """preemption.go `workloadFits`."""
        if not borrowing and leaf.usage + total > leaf.subtree:
            return False
        return total <= available(leaf)

    def _remove(self, workload: Workload) -> None:
        self.tree.shift(workload.queue, workload.flavor, -workload.total)

    def _add(self, workload: Workload) -> None:
        self.tree.shift(workload.queue, workload.flavor, workload.total)


def _try_next(mode: int, borrow: int, queue: SimQueue) -> bool:
    """flavorassigner.go `shouldTryNextFlavor`."""
    if mode in (NO_FIT, NO_CANDIDATES):
        return True
    if mode in (PREEMPT, RECLAIM) and queue.when_can_preempt == "TryNextFlavor":
        return True
    return bool(borrow) and queue.when_can_borrow == "TryNextFlavor"


def _preferred(a: tuple[int, int], b: tuple[int, int], preference: str = "BorrowingOverPreemption") -> bool:
    """flavorassigner.go `isPreferred` on (mode, -borrowing level): a flavor without preemption candidates
    below any viable one, then `borrowingOverPreemption` (the better mode, then less borrowing) or, with
    flavorFungibility.preference PreemptionOverBorrowing, less borrowing first."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if preference == "PreemptionOverBorrowing":
        return (a[1], a[0]) > (b[1], b[0])
    return a > b
