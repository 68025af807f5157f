"""The pending-work index: a pass tries the same jobs in the same order as a full scan of the queue would."""

from __future__ import annotations

import random

from gpupolicy.simulate.pending import PendingQueue, dominates


def _linear_pass(entries: list[tuple], sizes: dict, fits) -> list[tuple]:
    """The engine's former pass: walk the whole queue, skip jobs at least as large as the smallest failure."""
    tried, failed = [], None
    for entry in sorted(entries):
        size = sizes[entry]
        if dominates(size, failed):
            continue
        tried.append(entry)
        if not fits(size):
            if failed is None or dominates(failed, size):
                failed = size
    return tried


def _indexed_pass(queue: PendingQueue, fits) -> list[tuple]:
    tried, walk = [], queue.walk()
    while (step := walk.next()) is not None:
        entry, size = step
        tried.append(entry)
        if fits(size):
            queue.remove(entry, size)
            walk.started(entry, size)
        else:
            walk.failed(entry, size)
    return tried


def _capacity(free: int, per_node: int):
    left = [free]

    def fits(size) -> bool:
        if size[0] <= left[0] and size[1] <= per_node:
            left[0] -= size[0]
            return True
        return False

    return fits


def test_a_pass_tries_what_a_full_scan_tries_in_the_same_order():
    rng = random.Random(18)
    for _ in range(200):
        queue, sizes = PendingQueue(), {}
        for index in range(rng.randrange(1, 60)):
            per_pod = rng.choice((250, 500, 1000, 2000, 8000))
            size = (per_pod * rng.choice((1, 1, 2, 4)), per_pod, (), ())
            entry = (-rng.choice((100, 500)), rng.randrange(50), index, index)
            sizes[entry] = size
            queue.add(entry, size)
        free, per_node = rng.randrange(0, 20_000), rng.choice((4000, 8000))
        expected = _linear_pass(list(sizes), sizes, _capacity(free, per_node))
        assert _indexed_pass(queue, _capacity(free, per_node)) == expected


def test_a_dominated_group_is_never_visited():
    queue = PendingQueue()
    for index in range(1000):
        queue.add((0, index, index, index), (8000, 8000, (), ()))
    queue.add((0, 2000, 2000, 2000), (1000, 1000, (), ()))
    tried = _indexed_pass(queue, lambda size: size == (1000, 1000, (), ()))
    assert tried == [(0, 0, 0, 0), (0, 2000, 2000, 2000)]  # one failure rules out the other 999 big jobs
    assert len(queue) == 1000


def test_rescan_finds_jobs_requeued_behind_the_pass():
    queue = PendingQueue()
    queue.add((0, 1, 1, 1), (1000, 1000, (), ()))
    walk = queue.walk()
    entry, size = walk.next()
    queue.remove(entry, size)
    queue.add((0, 5, 5, 5), (2000, 2000, (), ()))  # a preempted victim sent back to this queue
    walk.rescan(entry)
    assert walk.next() == ((0, 5, 5, 5), (2000, 2000, (), ()))
    assert queue.head() == (0, 5, 5, 5)


def test_a_failure_rules_out_only_jobs_asking_at_least_as_much_of_flavors_it_could_take():
    # two pods of a quarter card each: small in total, but two whole cards on an exclusive flavor
    quarters = (500, 250, (), (("shared", 500), ("train", 2000)))
    whole = (1000, 1000, (), (("shared", 250), ("train", 1000)))
    assert not dominates(whole, quarters)  # it asks less of both flavors
    # a fractional job that fits only the time-sliced flavor says nothing of one that can take the exclusive
    shared_only = (250, 250, (), (("shared", 250),))
    assert not dominates(whole, shared_only)
    # one that can take fewer of the failed job's flavors, asking as much of each, cannot fit either
    whole_card_only = (1000, 1000, (), (("train", 1000),))
    assert dominates(whole_card_only, (250, 250, (), (("shared", 250), ("train", 1000))))
    assert dominates((2000, 2000, (), (("train", 2000),)), whole_card_only)
    assert not dominates(whole_card_only, whole_card_only[:2] + (("1g.10gb",), whole_card_only[3]))
