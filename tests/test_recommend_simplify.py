"""recommend's simplification walk: replays run side by side (the executor's width) give the same answer as
one replay after the other, and a variant is replayed once however many steps ask for it."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpupolicy.recommend import executors
from gpupolicy.recommend.search import Candidate, _one_at_a_time, _TakeBacks, earns_its_place

NAMES = ["a", "b", "c", "d", "e", "f"]


class FakeTakeBacks(_TakeBacks):
    """Six knobs at 1 in the candidate, 0 in the repository. Whether a set of changes can be taken back
    (`blocked`: sets that cannot) and what the objective is without them (`score`) are drawn from a seed;
    every replay is counted, with the round it ran in."""

    def __init__(self, seed: int, width: int) -> None:
        draw = random.Random(seed)
        self.width, self.done, self.rounds = width, {}, []
        self.scores: dict[frozenset, tuple] = {}
        self.blocked = {frozenset(draw.sample(NAMES, draw.randint(1, 3))) for _ in range(draw.randint(0, 3))}
        self.draw = draw

    def without(self, params: dict, names: list[str]) -> dict:
        return params | {name: 0 for name in names}

    def takes_back(self, params: dict) -> bool:
        return frozenset(k for k, v in params.items() if v == 0) not in self.blocked

    def reverted(self, params: dict) -> int:
        return sum(value == 0 for value in params.values())

    def replayed(self, variants: list[dict]) -> list[Candidate]:
        fresh = {tuple(sorted(p.items())) for p in variants} - set(self.done)
        self.rounds.append(len(fresh))
        for params in variants:
            key = tuple(sorted(params.items()))
            if key in self.done:
                continue
            out = frozenset(k for k, v in params.items() if v == 0)
            # a small integer objective, so that ties (no worse, not better) are frequent
            score = self.scores.setdefault(out, (self.draw.randint(0, 3), self.draw.randint(0, 2)))
            self.done[key] = Candidate(1, params, reverted=self.reverted(params), objective=score)
        return [self.done[tuple(sorted(p.items()))] for p in variants]


def _one_after_the_other(best: Candidate, idle: list[str], backs: FakeTakeBacks) -> Candidate:
    """The walk as it was written first: each change in turn, one replay at a time."""
    current = best
    for name in idle:
        params = backs.without(current.params, [name])
        if not backs.takes_back(params):
            continue
        trial = backs.replayed([params])[0]
        if not earns_its_place(current, trial):
            current = trial
    return current


def _best() -> Candidate:
    return Candidate(1, dict.fromkeys(NAMES, 1), objective=(1, 1))


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), width=st.integers(2, 4), count=st.integers(1, 6))
def test_side_by_side_gives_the_answer_of_one_after_the_other(seed, width, count):
    idle = NAMES[:count]
    reference_backs = FakeTakeBacks(seed, 1)
    reference = _one_after_the_other(_best(), idle, reference_backs)
    backs = FakeTakeBacks(seed, width)
    backs.scores = dict(reference_backs.scores)  # the same objective for every variant either walk asks
    answer = _one_at_a_time(_best(), idle, backs)
    assert (answer.params, answer.reverted, answer.objective) == (
        reference.params,
        reference.reverted,
        reference.objective,
    )
    # never more rounds than one replay after the other, never more replays in a round than the width
    assert len(backs.rounds) <= len(reference_backs.rounds)
    assert all(fresh <= width for fresh in backs.rounds)


def test_a_walk_where_every_change_goes_takes_half_the_rounds_on_two_workers():
    backs = FakeTakeBacks(0, 2)
    backs.blocked = set()
    # every variant alike and better than the candidate: no change earns its place, so each is taken back
    subsets = itertools.chain.from_iterable(itertools.combinations(NAMES, n) for n in range(len(NAMES) + 1))
    backs.scores = {frozenset(subset): (0, 0) for subset in subsets}
    answer = _one_at_a_time(_best(), NAMES, backs)
    assert answer.params == dict.fromkeys(NAMES, 0) and answer.reverted == len(NAMES)
    assert backs.rounds == [2, 2, 2]


def test_a_variant_already_replayed_is_not_replayed_again():
    backs = FakeTakeBacks(0, 2)
    backs.blocked = set()
    first = backs.replayed([{"a": 0}])[0]
    again, other = backs.replayed([{"a": 0}, {"b": 0}])
    assert again is first and backs.rounds == [1, 1] and other.params == {"b": 0}


@pytest.mark.parametrize("workers", [1, 3])
def test_an_executor_says_how_many_replays_run_side_by_side(workers):
    pool = executors.ProcessPool([], workers) if workers > 1 else executors.Serial([])
    try:
        assert pool.width == workers
        assert executors.Prepared(pool, lambda policy: policy).width == workers
    finally:
        pool.close()
