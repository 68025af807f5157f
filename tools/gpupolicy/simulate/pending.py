"""One ClusterQueue's pending jobs, indexed by size, so a scheduling pass looks only at what could now fit.

A pass walks the queue in scheduling order (priority, then submit time) and, once a job of size (total,
per pod) has failed, skips every job at least that large in both: it could not fit either. Walking the
whole queue to skip them made a pass cost as much as the queue is long, after every job that finished
(the Microsoft ITP trace on prod-eu spent 95% of its time there). Here the jobs are grouped by size, each
group kept in scheduling order, and a pass merges the heads of the groups (a heap with one cursor per
group): a group that is dominated by a failed size is dropped whole, so a pass costs the jobs it starts
plus, at most, one failed attempt per group (groups whose sizes are incomparable excepted, as before).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort

Size = tuple  # (total milli, milli per pod) as asked, MIG instances, per flavor what it charges (Run.size)
Entry = tuple  # (-priority, submit, run index, run index): sorts in scheduling order


def dominates(size: Size, failed: Size | None) -> bool:
    """True when `size` cannot fit where `failed` did not: at least as large in total and per pod, the same
    MIG instances (a larger job may take a kind of instance that is still free), and no flavor `failed` could
    not take, asking at least as much of each it takes (one a smaller job cannot take may still have room)."""
    if failed is None or size[0] < failed[0] or size[1] < failed[1] or size[2] != failed[2]:
        return False
    mine, theirs = size[3], failed[3]  # (quota key, amount) per flavor, in the queue's order
    if mine is theirs:  # equal charges are one object (Engine._add_demands_to_sizes): the common case
        return True
    others = iter(theirs)  # both in the queue's order: each of mine must come up, in turn, among theirs
    for key, amount in mine:
        failed_amount = next((asked for failed_key, asked in others if failed_key == key), None)
        if failed_amount is None or amount < failed_amount:  # a flavor it could not take, or less asked
            return False
    return True


class PendingQueue:
    def __init__(self) -> None:
        self.groups: dict[Size, list[Entry]] = {}
        self.count = 0
        self.added = 0  # bumped on every add, so a pass can tell that a preemption requeued a job here
        self.first: Entry | None = None  # the head, kept between changes (None: to be found again)
        self.least: tuple[Size, ...] | None = None  # `minimal_sizes`, kept while no group comes or goes

    def __len__(self) -> int:
        return self.count

    def add(self, entry: Entry, size: Size) -> None:
        if size not in self.groups:
            self.least = None
        insort(self.groups.setdefault(size, []), entry)
        self.count += 1
        self.added += 1
        if self.first is not None and entry < self.first:
            self.first = entry

    def holds(self, entry: Entry, size: Size) -> bool:
        group = self.groups.get(size, ())
        position = bisect_left(group, entry)
        return position < len(group) and group[position] == entry

    def remove(self, entry: Entry, size: Size) -> None:
        group = self.groups[size]
        del group[bisect_left(group, entry)]
        if not group:
            del self.groups[size]
            self.least = None
        self.count -= 1
        if entry == self.first:
            self.first = None

    def head(self) -> Entry | None:
        """The first job in scheduling order, or None when nothing is pending (asked of every stale queue on
        every pass, so kept until an add puts a job before it or it leaves)."""
        if self.first is None:
            self.first = min((group[0] for group in self.groups.values()), default=None)
        return self.first

    def minimal_sizes(self) -> tuple[Size, ...]:
        """The sizes pending that dominate no other size pending: every pending job dominates one of them."""
        if self.least is None:
            sizes = list(self.groups)
            self.least = tuple(
                size for size in sizes if not any(other != size and dominates(size, other) for other in sizes)
            )
        return self.least

    def walk(self) -> Walk:
        return Walk(self)


class Walk:
    """One scheduling pass over a PendingQueue in scheduling order, skipping sizes dominated by a failure.

    `next()` gives the next (entry, size) to try; the caller reports the outcome with `started(entry, size)`
    (the job left the queue) or `failed(entry, size)`. Jobs requeued into the queue during the pass (a
    preemption's victims) are picked up by `rescan(entry)`, which restarts the cursors after `entry`.
    """

    def __init__(self, queue: PendingQueue) -> None:
        self.queue = queue
        self.failed_size: Size | None = None
        self.heap: list[tuple[Entry, Size]] = [(group[0], size) for size, group in queue.groups.items()]
        heapq.heapify(self.heap)

    def next(self) -> tuple[Entry, Size] | None:
        heap = self.heap
        while heap:
            entry, size = heapq.heappop(heap)
            if not dominates(size, self.failed_size):
                return entry, size
        return None  # every group left is at least as large as a job that failed

    def _advance(self, size: Size, position: int) -> None:
        group = self.queue.groups.get(size)
        if group is not None and position < len(group):
            heapq.heappush(self.heap, (group[position], size))

    def started(self, entry: Entry, size: Size) -> None:
        """The job at `entry` left the queue: its group's cursor moves to the job after it."""
        group = self.queue.groups.get(size)
        self._advance(size, bisect_left(group, entry) if group is not None else 0)

    def failed(self, entry: Entry, size: Size) -> None:
        """The job at `entry` did not fit. As the engine always has, only a failure at most as large as the
        one remembered replaces it (a single reference size, never a set of them)."""
        if self.failed_size is None or dominates(self.failed_size, size):
            self.failed_size = size
        group = self.queue.groups[size]
        self._advance(size, bisect_right(group, entry))

    def rescan(self, entry: Entry) -> None:
        """Restart every group's cursor after `entry`: jobs were added behind the pass's position."""
        self.heap = []
        for size, group in self.queue.groups.items():
            self._advance(size, bisect_right(group, entry))
        heapq.heapify(self.heap)


class WaitingPods:
    """One pool's admitted jobs whose pods wait for nodes, in kube-scheduler's order (entry: (-priority,
    admission time, run index)), grouped by shape.

    A sweep retries them in that order, and once a shape did not fit it skips every pod whose shape is at
    least as large (Engine._place_waiting). A pool of time-sliced cards can hold dozens of pods waiting for a
    card's memory, in a few shapes: merging the groups' heads (as Walk does for pending jobs) lets a sweep
    drop a ruled-out shape whole instead of stepping over each of its pods.
    """

    def __init__(self) -> None:
        self.groups: dict[object, list[Entry]] = {}  # shape -> entries, sorted
        self.entries: dict[int, tuple[Entry, object]] = {}  # run index -> (entry, shape)

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: Entry, shape) -> None:
        self.discard(entry[-1])
        insort(self.groups.setdefault(shape, []), entry)
        self.entries[entry[-1]] = (entry, shape)

    def discard(self, index: int) -> None:
        found = self.entries.pop(index, None)
        if found is not None:
            entry, shape = found
            group = self.groups[shape]
            del group[bisect_left(group, entry)]
            if not group:
                del self.groups[shape]

    def sweep(self) -> Sweep:
        return Sweep(self)


class Sweep:
    """One pass over WaitingPods in order: `next()` gives the next (entry, shape); the caller says `placed`
    (the pod left the pool's wait, its group's next comes up) or nothing (its shape is ruled out for the rest
    of the pass: the group is dropped)."""

    def __init__(self, waiting: WaitingPods) -> None:
        self.waiting = waiting
        self.heap = [(group[0], shape) for shape, group in waiting.groups.items()]  # entries are unique
        heapq.heapify(self.heap)

    def next(self) -> tuple[Entry, object] | None:
        return heapq.heappop(self.heap) if self.heap else None

    def placed(self, entry: Entry, shape) -> None:
        self.waiting.discard(entry[-1])
        group = self.waiting.groups.get(shape, [])
        position = bisect_right(group, entry)
        if position < len(group):
            heapq.heappush(self.heap, (group[position], shape))
