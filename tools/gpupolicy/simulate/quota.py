"""Kueue's quota arithmetic over a cohort tree, per flavor and resource (resources.py), in milli-units.

Every node of the tree (a ClusterQueue, or a Cohort) holds, per quota key (a flavor, or one resource of it):
- a *subtree quota*: its own nominal quota plus what each child passes up, the child's subtree quota minus the
  child's *local quota*;
- a *local quota*: what its `lendingLimit` keeps from its parent, max(0, subtree - lendingLimit) (0 without a
  limit);
- a *usage*: a ClusterQueue's own; a Cohort's is what its children use beyond their local quota.
A request fits when it is at most `available`: the node's unused local quota plus what its parent has left,
capped by the node's `borrowingLimit`. All of it as Kueue computes it in pkg/cache/scheduler/resource_node.go
(v0.19.2: `localQuota`, `available`, `potentialAvailable`, `addUsage`, `removeUsage`, `accumulateFromChild`),
and reclaim candidates as pkg/scheduler/preemption/classical/hierarchical_preemption.go collects them
(`collectCandidatesForHierarchicalReclaim`). A flat cohort is the one-level case of the same arithmetic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .policy import FlavorQuota, SimCohort, SimQueue
from .resources import bucket_key


@dataclass(slots=True, eq=False)
class Node:
    """One ClusterQueue's or Cohort's quota under one quota key."""

    name: str
    is_queue: bool
    key: str = ""  # the quota key whose tree it is in
    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None
    subtree: int = 0
    local: int = 0
    usage: int = 0
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    # fixed once the tree is built (QuotaTree._settle), as they read no usage; -1 / None until then
    height: int = -1  # getNodeHeight (see _height)
    reach: int | None = None  # potentialAvailable (see potential)
    flat: bool = False  # a root cohort of queues alone: a reclaim walk from its queues is one step
    # `available`, kept while no usage in the node's tree moved: `moves` is the tree's count of usage changes,
    # one list shared by all the nodes of its quota key (given to each as it is made, QuotaTree)
    moves: list[int] = field(default_factory=lambda: [0])
    seen: int = -1  # moves[0] when `free` was worked out
    free: int = 0

    def local_available(self) -> int:
        return max(0, self.local - self.usage)

    def within_nominal(self) -> bool:
        """Kueue's IsWithinNominalInResources: the node uses no more than its subtree quota."""
        return self.usage <= self.subtree


def available(node: Node) -> int:
    """What the node could still admit now (resource_node.go `available`), kept on the node until usage in
    its tree moves (the engine asks this on every admission attempt, more often than usage changes). Plain
    comparisons instead of min/max."""
    moves = node.moves[0]
    if node.seen == moves:
        return node.free
    parent = node.parent
    if parent is None:
        free = node.subtree - node.usage
    else:
        from_parent = available(parent)
        local, usage = node.local, node.usage
        if node.borrowing_limit is not None:
            used_in_parent = usage - local if usage > local else 0
            capped = node.subtree - local - used_in_parent + node.borrowing_limit
            if capped < from_parent:
                from_parent = capped
        free = (local - usage if local > usage else 0) + from_parent
    node.seen, node.free = moves, free
    return free


def potential(node: Node) -> int:
    """What the node could admit with nothing running anywhere (resource_node.go `potentialAvailable`). It
    reads quotas and limits only, never usage, so a built tree keeps it per node (`Node.reach`)."""
    if node.reach is not None:
        return node.reach
    if node.parent is None:
        return node.subtree
    reach = node.local + potential(node.parent)
    if node.borrowing_limit is not None:
        reach = min(node.subtree + node.borrowing_limit, reach)
    return reach


def lowest_fitting_subtree(leaf: Node, demand: int) -> tuple[int, bool]:
    """(height, may reclaim in hierarchy) of the lowest subtree whose quota holds `demand` more, as Kueue's
    `FindHeightOfLowestSubtreeThatFits` (pkg/scheduler/preemption/classical/hierarchical_preemption.go): 0
    when the queue needs no borrowing; the flag says the subtree found is not the whole tree."""
    if leaf.usage + demand <= leaf.subtree or leaf.parent is None:
        return 0, leaf.parent is not None
    remaining = demand - (leaf.local - leaf.usage if leaf.local > leaf.usage else 0)  # local_available
    node = leaf.parent
    while True:
        if node.usage + remaining <= node.subtree:
            return _height(node), node.parent is not None
        if node.parent is None:
            return _height(node), False
        remaining -= node.local - node.usage if node.local > node.usage else 0
        node = node.parent


def _height(cohort: Node) -> int:
    """hierarchical_preemption.go `getNodeHeight`: 1 for a cohort of queues, one more per level of cohorts
    (the tree's shape only: a built tree keeps it per node, `Node.height`)."""
    if cohort.height >= 0:
        return cohort.height
    height = min(len(cohort.children), 1)
    for child in cohort.children:
        if not child.is_queue:
            height = max(height, _height(child) + 1)
    return height


def add_usage(node: Node, amount: int) -> None:
    """Charge the node; what exceeds its unused local quota is charged to its parent as well."""
    node.moves[0] += 1  # what `available` kept in this tree is stale
    local_available = node.local - node.usage if node.local > node.usage else 0
    node.usage += amount
    if node.parent is not None and amount > local_available:
        add_usage(node.parent, amount - local_available)


def remove_usage(node: Node, amount: int) -> None:
    """Refund the node, and the parent for the part the node had stored there."""
    node.moves[0] += 1  # what `available` kept in this tree is stale
    stored_in_parent = node.usage - node.local
    node.usage -= amount
    if node.parent is not None and stored_in_parent > 0:
        remove_usage(node.parent, min(amount, stored_in_parent))


class QuotaTree:
    """The cohort forest of a SimPolicy, one tree of Nodes per quota key (`flavor` in
    the methods below: a flavor, or `flavor/resource`), with each queue's leaf at hand."""

    def __init__(self, queues: Mapping[str, SimQueue], cohorts: Mapping[str, SimCohort]):
        self.leaves: dict[tuple[str, str], Node] = {}  # (queue, quota key) -> its node
        self.versions: Counter = Counter()  # quota key -> changes of usage in its tree (`use`)
        self.changes = 0  # changes of usage in any tree (`use`)
        cohort_nodes: dict[tuple[str, str], Node] = {}
        moves: dict[str, list[int]] = {}  # quota key -> its tree's count of usage changes (Node.moves)
        keys = {key for q in queues.values() for fq in q.flavors for key, *_ in _buckets(fq)}
        keys |= {key for c in cohorts.values() for fq in c.flavors for key, *_ in _buckets(fq)}

        def cohort_node(name: str, key: str) -> Node:
            if (name, key) not in cohort_nodes:
                cohort = cohorts.get(name) or SimCohort(name)
                node = _node(name, False, key, _quota_in(cohort.flavors, key), moves.setdefault(key, [0]))
                cohort_nodes[(name, key)] = node
                if cohort.parent:  # policy.from_cluster refuses a cycle (CAP008), so this ends
                    _attach(node, cohort_node(cohort.parent, key))
            return cohort_nodes[(name, key)]

        for key in sorted(keys):
            for name in sorted(cohorts):
                if _quota_in(cohorts[name].flavors, key):
                    cohort_node(name, key)
            for queue in queues.values():
                quota = _quota_in(queue.flavors, key)
                if quota is None:
                    continue
                leaf = _node(queue.name, True, key, quota, moves.setdefault(key, [0]))
                self.leaves[(queue.name, key)] = leaf
                if queue.cohort:
                    _attach(leaf, cohort_node(queue.cohort, key))
        for root in [n for n in cohort_nodes.values() if n.parent is None] + [
            leaf for leaf in self.leaves.values() if leaf.parent is None
        ]:
            _accumulate(root)
        self.cohort_nodes = cohort_nodes  # (cohort, quota key) -> its node
        self._settle()

    def _settle(self) -> None:
        """Keep on each node what reads the tree's shape and quotas alone (its height, its potential), which
        admission asks on every attempt: nothing changes them once the tree is built, only usage moves."""
        nodes = list(self.nodes())
        for node in nodes:
            node.height, node.reach = _height(node), potential(node)
            node.flat = not node.is_queue and node.parent is None and all(c.is_queue for c in node.children)

    def fits(self, queue: str, flavor: str, demand: int) -> bool:
        return demand <= available(self.leaves[(queue, flavor)])

    def potential(self, queue: str, flavor: str) -> int:
        return potential(self.leaves[(queue, flavor)])

    def use(self, queue: str, flavor: str, delta: int) -> None:
        self.versions[flavor] += 1
        self.changes += 1
        self.shift(queue, flavor, delta)

    def shift(self, queue: str, flavor: str, delta: int) -> None:
        """Change usage without counting a version: for a tentative change its caller undoes before anything
        reads the versions (a preemption search taking candidates out and putting them back leaves the tree as
        it was, so the verdicts stamped with it stay true)."""
        leaf = self.leaves[(queue, flavor)]
        if delta >= 0:
            add_usage(leaf, delta)
        else:
            remove_usage(leaf, -delta)

    def reclaim_sources(self, queue: str, flavor: str, demand: int) -> list[str]:
        """Queues of the tree from which `queue` may reclaim `demand` on `flavor` in the placement engine
        (Engine._preempt_for): those `cohort_candidates` finds with Kueue's hierarchical advantage."""
        return [name for name, advantage, _ in self.cohort_candidates(queue, flavor, demand) if advantage]

    def cohort_candidates(self, queue: str, flavor: str, demand: int) -> list[tuple[str, bool, Node]]:
        """(queue, hierarchical advantage, subtree root) for every other queue of the tree that is above its
        nominal quota, walking up from `queue` as Kueue's `collectCandidatesForHierarchicalReclaim`
        (pkg/scheduler/preemption/classical/hierarchical_preemption.go) does: candidates collected while the
        preemptor's side already fits the request have the advantage, the others are priority candidates."""
        leaf = self.leaves[(queue, flavor)]
        advantage = leaf.usage + demand <= leaf.subtree  # QuantitiesFitInQuota
        parent = leaf.parent
        if parent is not None and parent.flat:  # the walk's first step is its last (asked on most attempts)
            return [
                (n.name, advantage, parent) for n in parent.children if n is not leaf and n.usage > n.subtree
            ]
        remaining = max(0, demand - leaf.local_available())
        found: list[tuple[str, bool, Node]] = []
        previous, current = leaf, leaf.parent
        while current is not None:
            found += [
                (n.name, advantage, current) for n in _over_nominal(current, skip=previous) if n is not leaf
            ]
            advantage = advantage or current.usage + remaining <= current.subtree
            remaining = max(0, remaining - current.local_available())
            previous, current = current, current.parent
        return found

    def still_borrowing(self, queue: str, flavor: str, lca: Node | None) -> bool:
        """Kueue's `candidateIsValid` (classical/candidate_generator.go): the candidate's queue, and every
        cohort
        between it and the subtree root it was found under, still use more than their nominal quota."""
        node = self.leaves[(queue, flavor)]
        if node.within_nominal():
            return False
        node = node.parent
        while node is not None and node is not lca:
            if node.within_nominal():
                return False
            node = node.parent
        return True

    def nodes(self) -> Iterator[Node]:
        """Every node: each queue's leaf and the cohorts above it, then cohorts no queue is below (their quota
        still counts in their parent's, and fair sharing's lendable capacity)."""
        seen: set[int] = set()
        for start in [*self.leaves.values(), *self.cohort_nodes.values()]:
            node: Node | None = start
            while node is not None and id(node) not in seen:
                seen.add(id(node))
                yield node
                node = node.parent


def _buckets(fq: FlavorQuota) -> list[tuple[str, int, int | None, int | None]]:
    """The flavor's quota buckets (key, nominal, borrowingLimit, lendingLimit): one per resource name where
    the flavor counts them apart (resources.py), else its single GPU bucket."""
    if fq.resources:
        return [(bucket_key(fq.flavor, name), *limits) for name, *limits in fq.resources]
    return [(fq.flavor, fq.nominal, fq.borrowing_limit, fq.lending_limit)]


def _quota_in(flavors: tuple[FlavorQuota, ...], key: str) -> tuple | None:
    for fq in flavors:
        for bucket in _buckets(fq):
            if bucket[0] == key:
                return bucket
    return None


def _node(name: str, is_queue: bool, key: str, bucket: tuple | None, moves: list[int]) -> Node:
    if bucket is None:
        return Node(name, is_queue, key, moves=moves)
    _, nominal, borrowing, lending = bucket
    return Node(name, is_queue, key, nominal, borrowing, lending, moves=moves)


def _attach(child: Node, parent: Node) -> None:
    child.parent = parent
    parent.children.append(child)


def _accumulate(node: Node) -> None:
    """Subtree and local quota, bottom up (resource_node.go `updateCohortResourceNode`)."""
    node.subtree = node.nominal
    for child in node.children:
        _accumulate(child)
        node.subtree += child.subtree - child.local
    node.local = 0 if node.lending_limit is None else max(0, node.subtree - node.lending_limit)


def _over_nominal(cohort: Node, skip: Node, found: list[Node] | None = None) -> list[Node]:
    """The queues under `cohort` using more than their nominal quota, not descending into `skip` or into child
    cohorts within their quota (hierarchical_preemption.go `collectCandidatesInSubtree`), in tree order. A
    list filled in place rather than a generator: admission collects them on every preemption attempt."""
    if found is None:
        found = []
    for child in cohort.children:
        if child is skip or child.usage <= child.subtree:  # within nominal: nothing to take from it
            continue
        if child.is_queue:
            found.append(child)
        else:
            _over_nominal(child, skip, found)
    return found
