"""Where a pod goes inside one pool: per-card free capacity, indexed so a placement never scans every node.

Nodes are bucketed by how many whole cards they have free, and the partly used cards are kept apart, so a
whole-card pod looks at most at `gpus_per_node` buckets and a fractional pod only at partly used cards plus
one node per bucket.

The scores are the registry `PLACEMENTS` (name -> placement; `simulate --policy` offers its names):
- best-fit: the card or node left with the least free capacity that still fits (tightest packing);
- frag-aware: in the spirit of FGD (Weng et al., ATC'23): the node's fragmentation is the free capacity that
  the typical request sizes of the workload could not use, weighted by how common each size is; a pod goes
  where that expected fragmentation grows least, best-fit breaking ties.
A cluster's declared policy places with `DEFAULT_PLACEMENT`; the naive baseline (and a SimPolicy that names
none) with `BASELINE_PLACEMENT`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .jobs import MILLI, Shape

Slot = tuple[int, int, int, int]  # node, card, milli taken, memory milli taken (Shape.memory)
# names in PLACEMENTS (below, with the classes that score)
DEFAULT_PLACEMENT = "frag-aware"  # a cluster's declared policy places with it (`simulate --policy` default)
BASELINE_PLACEMENT = "best-fit"  # the naive baseline's, and a SimPolicy's that names none


class WorkingNodes:
    """What every pool state shares: nodes that fail and recover, and the capacity of the working ones. A
    state
    says in `_leave` and `_rejoin` how a node leaves and rejoins its placement index."""

    failed: set[int]
    capacity: int
    gpus_per_node: int

    def _node_count(self) -> int:
        raise NotImplementedError

    def _leave(self, node: int) -> None:
        raise NotImplementedError

    def _rejoin(self, node: int) -> None:
        raise NotImplementedError

    def fail(self, count: int) -> list[int]:
        """Take `count` working nodes out (highest index first); returns them. Their cards must be
        released."""
        down = [n for n in range(self._node_count() - 1, -1, -1) if n not in self.failed][:count]
        for node in down:
            self._leave(node)
            self.failed.add(node)
            self.capacity -= self.gpus_per_node * MILLI
        return down

    def recover(self, nodes: Iterable[int]) -> None:
        for node in nodes:
            if node in self.failed:
                self.failed.discard(node)
                self._rejoin(node)
                self.capacity += self.gpus_per_node * MILLI

    def nodes_of(self, slots: Iterable[Slot]) -> set[int]:
        return {slot[0] for slot in slots}


class PoolState(WorkingNodes):
    def __init__(
        self,
        name: str,
        nodes: int,
        gpus_per_node: int,
        strategy: str = BASELINE_PLACEMENT,
        typical: Iterable[tuple[tuple[int, int], float]] = (),
    ):
        self.name = name
        self.gpus_per_node = gpus_per_node
        self.free = [[MILLI] * gpus_per_node for _ in range(nodes)]
        # memory milli in use, where pods declare it
        self.memory = [[0] * gpus_per_node for _ in range(nodes)]
        # a startup check keeps a pod off a card whose memory its neighbours hold (it waits instead of
        # starting)
        self.memory_check = True
        self.whole = [gpus_per_node] * nodes  # fully free cards per node
        self.buckets: list[dict[int, None]] = [{} for _ in range(gpus_per_node + 1)]  # ordered sets
        self.buckets[gpus_per_node] = dict.fromkeys(range(nodes))
        self.partial: dict[tuple[int, int], None] = {}  # (node, card) with 0 < free < MILLI
        self.failed: set[int] = set()
        self.strategy = strategy
        self.placement = placement_named(strategy)
        self.typical = [(count, milli, weight) for (count, milli), weight in typical]
        self._frag_memo: dict[tuple, float] = {}
        self.allocated = 0  # milli in use
        self.capacity = nodes * gpus_per_node * MILLI  # of the working nodes
        self.full_capacity = self.capacity  # every node up

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _set_whole(self, node: int, value: int) -> None:
        old = self.whole[node]
        if old != value:
            if node not in self.failed:
                del self.buckets[old][node]
                self.buckets[value][node] = None
            self.whole[node] = value

    def _take(self, node: int, card: int, milli: int, memory: int = 0) -> None:
        self.memory[node][card] += memory
        before = self.free[node][card]
        after = before - milli
        self.free[node][card] = after
        if before == MILLI:
            self._set_whole(node, self.whole[node] - 1)
        if 0 < after < MILLI:
            self.partial[(node, card)] = None
        elif before < MILLI:
            self.partial.pop((node, card), None)
        self.allocated += milli

    def release(self, slots: Iterable[Slot]) -> None:
        for node, card, milli, memory in slots:
            self.memory[node][card] -= memory
            after = self.free[node][card] + milli
            self.free[node][card] = after
            if after == MILLI:
                self.partial.pop((node, card), None)
                self._set_whole(node, self.whole[node] + 1)
            else:
                self.partial[(node, card)] = None
            self.allocated -= milli

    def _node_count(self) -> int:
        return len(self.free)

    def _leave(self, node: int) -> None:
        del self.buckets[self.whole[node]][node]

    def _rejoin(self, node: int) -> None:
        self.buckets[self.whole[node]][node] = None

    def busy(self, slots: Iterable[Slot]) -> bool:
        """True when a card of `slots` has more memory in use than it holds: the newest pod meets a busy
        device."""
        return any(self.memory[node][card] > MILLI for node, card, _, memory in slots if memory)

    # -- placement -----------------------------------------------------------------------------------
    def place(self, shape: Shape) -> list[Slot] | None:
        """Place every pod of `shape` (gang: all or nothing); the cards are taken when it succeeds."""
        slots: list[Slot] = []
        for _ in range(shape.pods):
            pod = self._place_pod(shape.count, shape.milli, shape.memory)
            if pod is None:
                self.release(slots)
                return None
            slots.extend(pod)
        return slots

    def whole_pods(self, count: int) -> int:
        """How many pods of `count` whole cards the working nodes hold: a node with k free cards holds k //
        count
        of them wherever the others go, so this is exactly what trial placements would find."""
        return sum(len(self.buckets[k]) * (k // count) for k in range(max(count, 1), self.gpus_per_node + 1))

    def fits(self, shape: Shape) -> bool:
        if shape.milli == MILLI:
            return self.whole_pods(shape.count) >= shape.pods
        slots = self.place(shape)
        if slots is None:
            return False
        self.release(slots)
        return True

    def _place_pod(self, count: int, milli: int, memory: int = 0) -> list[Slot] | None:
        if milli == MILLI:
            node = self._whole_node(count)
            if node is None:
                return None
            free = self.free[node]
            cards = [c for c in range(self.gpus_per_node) if free[c] == MILLI][:count]
            for card in cards:
                self._take(node, card, MILLI)
            return [(node, card, MILLI, 0) for card in cards]
        spot = self._fraction_card(milli, memory if self.memory_check else 0)
        if spot is None:
            return None
        self._take(spot[0], spot[1], milli, memory)
        return [(spot[0], spot[1], milli, memory)]

    def _whole_node(self, count: int) -> int | None:
        candidates = [
            (k, next(iter(self.buckets[k]))) for k in range(count, self.gpus_per_node + 1) if self.buckets[k]
        ]
        if not candidates:
            return None
        return self.placement.whole_node(self, count, candidates)

    def _fraction_card(self, milli: int, memory: int = 0) -> tuple[int, int] | None:
        """A card with `milli` free and, when `memory` is given, that much memory its neighbours leave
        free."""
        free, used, failed, room = self.free, self.memory, self.failed, MILLI - memory  # asked per pod
        fitting = [
            (n, c) for n, c in self.partial if free[n][c] >= milli and used[n][c] <= room and n not in failed
        ]
        fresh = [(k, next(iter(bucket))) for k, bucket in enumerate(self.buckets) if k and bucket]
        return self.placement.fraction_card(self, milli, fitting, fresh)

    # -- fragmentation (FGD-style) -------------------------------------------------------------------
    def _node_frag(self, node: int, take_count: int | None, milli: int) -> float:
        free = list(self.free[node])
        if take_count:
            taken = 0
            for card in range(len(free)):
                if taken < take_count and free[card] == MILLI:
                    free[card] -= milli
                    taken += 1
        return self.frag_of(tuple(sorted(free)))

    def _card_frag_growth(self, node: int, card: int, milli: int) -> float:
        free = list(self.free[node])
        before = self.frag_of(tuple(sorted(free)))
        free[card] -= milli
        return self.frag_of(tuple(sorted(free))) - before

    def frag_of(self, free: tuple[int, ...]) -> float:
        cached = self._frag_memo.get(free)
        if cached is None:
            cached = self._frag_memo[free] = fragmentation(free, self.typical)
        return cached


# -- the placement scores: one class per policy, registered by name ------------------------------------------
Candidates = list[tuple[int, int]]  # (fully free cards, node) per bucket that fits, fewest free cards first


class BestFit:
    """The card or node left with the least free capacity that still fits (tightest packing)."""

    def whole_node(self, pool: PoolState, count: int, candidates: Candidates) -> int:
        """The node for a pod of `count` whole cards, among the first node of each bucket that fits."""
        return candidates[0][1]

    def fraction_card(
        self, pool: PoolState, milli: int, fitting: list[tuple[int, int]], fresh: Candidates
    ) -> tuple[int, int] | None:
        """(node, card) for a pod of `milli` of one card: a partly used card that fits, else a free one."""
        if fitting:
            return min(fitting, key=lambda s: pool.free[s[0]][s[1]])
        if fresh:
            node = fresh[0][1]
            return node, pool.free[node].index(MILLI)
        return None


class FragAware(BestFit):
    """Least growth of the node's fragmentation over the workload's typical sizes (`fragmentation`), then the
    tightest fit; plain best-fit when the pool knows no typical sizes."""

    def whole_node(self, pool: PoolState, count: int, candidates: Candidates) -> int:
        if len(candidates) < 2 or not pool.typical:
            return super().whole_node(pool, count, candidates)

        def growth(item: tuple[int, int]) -> tuple[float, int]:
            k, node = item
            before = pool._node_frag(node, None, 0)
            after = pool._node_frag(node, count, MILLI)
            return (after - before, k)

        return min(candidates, key=growth)[1]

    def fraction_card(
        self, pool: PoolState, milli: int, fitting: list[tuple[int, int]], fresh: Candidates
    ) -> tuple[int, int] | None:
        if not pool.typical:
            return super().fraction_card(pool, milli, fitting, fresh)
        options = fitting + [(node, pool.free[node].index(MILLI)) for _, node in fresh]
        if not options:
            return None

        def growth(spot: tuple[int, int]) -> tuple[float, int]:
            node, card = spot
            return (pool._card_frag_growth(node, card, milli), pool.free[node][card])

        return min(options, key=growth)


Placement = BestFit  # the interface: whole_node and fraction_card
PLACEMENTS: dict[str, Placement] = {"best-fit": BestFit(), "frag-aware": FragAware()}


def placement_named(name: str) -> Placement:
    try:
        return PLACEMENTS[name]
    except KeyError:
        raise ValueError(f"unknown placement {name!r}: one of {', '.join(sorted(PLACEMENTS))}") from None


def fragmentation(free: tuple[int, ...], typical: list[tuple[int, int, float]]) -> float:
    """Expected free capacity of a node (its cards' free milli) that a typical request could not use:
    `typical` is (cards per pod, milli per card, weight); a request that does not fit wastes all of it, one
    that fits wastes the cards too small for it. The engine's frag-aware score, also run by fidelity.py."""
    total = sum(free)
    frag = 0.0
    for count, milli, weight in typical:
        usable = sum(1 for f in free if f >= milli)
        if usable < count:
            frag += weight * total
        else:
            frag += weight * sum(f for f in free if f < milli)
    return frag


def typical_sizes(
    shapes: Iterable[tuple[int, int]], coverage: float = 0.95
) -> list[tuple[tuple[int, int], float]]:
    """The most common (cards per pod, milli per card) sizes covering `coverage` of pods, as weights summing
    to 1."""
    counts = Counter(shapes)
    total = sum(counts.values())
    if not total:
        return []
    chosen: list[tuple[tuple[int, int], int]] = []
    covered = 0
    for size, n in counts.most_common():
        chosen.append((size, n))
        covered += n
        if covered >= coverage * total:
            break
    return [(size, n / covered) for size, n in chosen]
