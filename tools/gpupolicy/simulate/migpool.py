"""A MIG pool replayed per layout: each card is cut into the instances its mig-parted layout makes, and a pod
takes one instance of the profile it asks for.

The layout is fixed while the replay runs, as it is in the cluster: mig-manager applies the layout a node's
`nvidia.com/mig.config` label names and the device plugin advertises each profile's instances as their own
resource (`nvidia.com/mig-<profile>` under the mixed strategy), so a pod asking for `mig-1g.10gb` gets a 1g
instance or waits, whatever else the card has free. Which card of a node holds the instance does not change
what else fits (instances are not re-cut), so free instances are counted per node and profile.

Placement is best-fit over nodes: the working node with the fewest free instance milli that still has one of
the profile, so partly used nodes fill first and whole nodes stay free (the same preference PoolState has).
The FGD-style fragmentation score has nothing to choose here: fixed instances cannot fragment.

The interface is PoolState's (placement.py; node failures come from their common WorkingNodes), so the engine
drives both alike. A slot is (node, profile index,
milli, 0): the profile index stands where PoolState has the card.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..domain import catalog
from .jobs import MILLI, Shape, instance_milli
from .placement import WorkingNodes

Slot = tuple[int, int, int, int]


class MigPoolState(WorkingNodes):
    def __init__(self, name: str, nodes: int, instances: tuple[tuple[tuple[str, int], ...], ...], model: str):
        card = catalog.gpu(model)
        self.name = name
        self.gpus_per_node = len(instances)
        self.profiles = tuple(sorted({profile for per_card in instances for profile, _ in per_card}))
        self.index = {profile: i for i, profile in enumerate(self.profiles)}
        self.milli = [instance_milli(profile, card) for profile in self.profiles]
        per_node = [0] * len(self.profiles)
        for per_card in instances:
            for profile, count in per_card:
                per_node[self.index[profile]] += count
        self.per_node = tuple(per_node)
        self.free = [list(per_node) for _ in range(nodes)]  # node -> profile index -> free instances
        self.free_milli = [sum(c * m for c, m in zip(per_node, self.milli, strict=True))] * nodes
        # profile index -> working nodes with a free instance of it (ordered sets, as PoolState's buckets)
        self.holders: list[dict[int, None]] = [
            dict.fromkeys(range(nodes)) if count else {} for count in per_node
        ]
        self.failed: set[int] = set()
        self.memory_check = True  # unused: MIG instances isolate memory
        self.allocated = 0
        self.capacity = nodes * self.gpus_per_node * MILLI  # of the working nodes: cards, cut or not
        self.full_capacity = self.capacity

    def _take(self, node: int, profile: int, milli: int, memory: int = 0) -> None:
        self.free[node][profile] -= 1
        self.free_milli[node] -= milli
        if not self.free[node][profile]:
            self.holders[profile].pop(node, None)
        self.allocated += milli

    def release(self, slots: Iterable[Slot]) -> None:
        for node, profile, milli, _ in slots:
            self.free[node][profile] += 1
            self.free_milli[node] += milli
            if node not in self.failed:
                self.holders[profile][node] = None
            self.allocated -= milli

    def place(self, shape: Shape) -> list[Slot] | None:
        """One instance of `shape.profile` per pod (gang: all or nothing)."""
        profile = self.index.get(shape.profile)
        if profile is None or len(self.holders[profile]) == 0:
            return None
        slots: list[Slot] = []
        for _ in range(shape.pods):
            if not self.holders[profile]:
                self.release(slots)
                return None
            node = min(self.holders[profile], key=lambda n: (self.free_milli[n], n))
            self._take(node, profile, shape.milli)
            slots.append((node, profile, shape.milli, 0))
        return slots

    def fits(self, shape: Shape) -> bool:
        profile = self.index.get(shape.profile)
        if profile is None:
            return False
        return sum(self.free[node][profile] for node in self.holders[profile]) >= shape.pods

    def whole_pods(self, count: int) -> int:
        return 0  # no card of a MIG pool is handed out whole

    def _node_count(self) -> int:
        return len(self.free)

    def _leave(self, node: int) -> None:
        for holders in self.holders:
            holders.pop(node, None)

    def _rejoin(self, node: int) -> None:
        for profile, holders in enumerate(self.holders):
            if self.free[node][profile]:
                holders[node] = None

    def busy(self, slots: Iterable[Slot]) -> bool:
        return False  # an instance's memory is its own
