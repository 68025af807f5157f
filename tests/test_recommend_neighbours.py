"""`recommend`'s hill-climbing half (recommend/neighbours.py): moves one step from a policy, and a search
whose every second trial is one move from the best candidate found so far."""

from __future__ import annotations

import random

import pytest
from support import fleet_repo

from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import executors, neighbours, space, targets
from gpupolicy.recommend.search import _local_share, search, worth_checking
from gpupolicy.simulate.traces import read_trace

# The tests' own fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
TRACE = REPO / "tools/gpupolicy/data/traces/synthetic-week.csv"


@pytest.fixture(scope="module")
def cluster():
    return load_fleet(REPO, ["prod-us"]).clusters["prod-us"]


@pytest.fixture(scope="module")
def knob_list(cluster):
    return space.knobs(cluster)


def _all(knob_list, params) -> list[dict]:
    return [move for group in neighbours.moves(knob_list, params).values() for move in group]


def _changed(knob_list, before, after) -> dict:
    return {k.name: (before[k.name], after[k.name]) for k in knob_list if before[k.name] != after[k.name]}


def test_every_move_is_valid_new_and_small(knob_list):
    start = space.current_values(knob_list)
    found = _all(knob_list, start)
    assert found, "the fixture fleet has knobs, so some move exists"
    keys = [space.params_key(m) for m in found]
    assert len(set(keys)) == len(keys) and space.params_key(start) not in keys
    by_name = {k.name: k for k in knob_list}
    for move in found:
        assert space.resolved(knob_list, move) == move  # valid by construction: nothing left to resolve
        changed = _changed(knob_list, start, move)
        # a lending limit moves alone, or comes down with its queue's nominal quota (CAP010)
        moved = [name for name in changed if by_name[name].kind != space.LEND] or list(changed)
        assert 1 <= len(moved) <= 2, changed  # one knob, or a transfer of nominal quota between two queues
        for name in moved:
            knob, (old, new) = by_name[name], changed[name]
            if knob.grid:
                grid = sorted(knob.grid)
                assert abs(grid.index(new) - grid.index(old)) == 1
            elif not knob.choices:
                assert abs(int(new) - int(old)) <= neighbours.step(knob)
        if len(moved) == 2:  # a transfer keeps what the two queues hold together on their pool
            assert {by_name[n].kind for n in moved} == {space.NOMINAL}
            assert sum(int(changed[n][1]) - int(changed[n][0]) for n in moved) <= 0


def test_each_integer_knob_moves_both_ways_where_its_range_allows(knob_list):
    start = space.current_values(knob_list)
    groups = neighbours.moves(knob_list, start)
    found = _all(knob_list, start)
    for knob in knob_list:
        if knob.grid or knob.choices or knob.kind == space.NOMINAL:
            continue
        values = {m[knob.name] for m in found if _changed(knob_list, start, m).keys() == {knob.name}}
        wanted = {
            v
            for v in (knob.current - neighbours.step(knob), knob.current + neighbours.step(knob))
            if knob.low <= v <= knob.high
        }
        # a lending limit cannot rise above its queue's nominal quota (CAP010): that move resolves to today's
        if knob.kind == space.LEND:
            wanted = {v for v in wanted if space.resolved(knob_list, start | {knob.name: v})[knob.name] == v}
        assert values == wanted, knob.name
        assert {m[knob.name] for m in groups.get(knob.name, [])} == wanted  # grouped under the knob moved


def test_the_climb_never_offers_a_policy_twice_and_follows_its_incumbent(knob_list):
    start = space.current_values(knob_list)
    climb = neighbours.Climb(knob_list, seed=3)
    climb.asked(start)
    first = climb.next(2, start)
    assert len(first) == 2 and all(m in _all(knob_list, start) for m in first)
    climb.asked(first[0])
    rest = climb.next(10_000, start)
    assert not {space.params_key(m) for m in rest} & {space.params_key(m) for m in first}
    assert len(first) + len(rest) == len(_all(knob_list, start))  # every move, once
    assert climb.next(1, start) == []  # nothing left around this incumbent
    elsewhere = first[0]
    assert all(m in _all(knob_list, elsewhere) for m in climb.next(3, elsewhere))
    again = neighbours.Climb(knob_list, seed=3)
    again.asked(start)
    assert again.next(2, start) == first  # the order is the seed's


def test_the_climb_moves_every_knob_once_before_any_twice():
    groups = {"a": [{"a": 1}, {"a": 2}, {"a": 3}], "b": [{"b": 1}], "c": [{"c": 1}, {"c": 2}]}
    order = neighbours.spread(groups, random.Random(0))
    assert sorted(map(space.params_key, order)) == sorted(
        space.params_key(m) for g in groups.values() for m in g
    )
    assert {next(iter(m)) for m in order[:3]} == {"a", "b", "c"}  # round 1: each group once
    assert {next(iter(m)) for m in order[3:5]} == {"a", "c"}  # round 2: the groups with moves left
    assert order == neighbours.spread(groups, random.Random(0))  # the seed's order


@pytest.mark.parametrize("trials,batch", [(64, 8), (7, 3), (5, 1), (10, 4)])
def test_every_second_trial_is_a_local_one_whatever_the_batch(trials, batch):
    asked, local = 0, 0
    while asked < trials:
        size = min(batch, trials - asked)
        share = _local_share(asked, size)
        assert 0 <= share <= size
        local, asked = local + share, asked + size
    assert local == trials // 2


def test_the_search_climbs_from_the_best_candidate_so_far(cluster, knob_list):
    jobs = sorted(read_trace(TRACE, "csv").jobs, key=lambda j: (j.submit, j.id))[:150]
    wanted = targets.parse("training:p50<2h")
    found = search(cluster, knob_list, wanted, trials=6, seed=7, batch=3, run=executors.Serial(jobs))
    by_number = {c.number: c for c in found}
    repository = space.resolved(knob_list, space.current_values(knob_list))
    # batch 0 (trials 0-2): the repository's policy, one move from it, one TPE sample
    assert by_number[0].params == repository
    assert by_number[1].params in _all(knob_list, repository)
    # batch 1 (trials 3-5): two moves from the best of batch 0 that improves on the repository's policy
    incumbent = worth_checking([by_number[n] for n in range(3) if by_number[n].summary], 1)[0]
    around = _all(knob_list, incumbent.params)
    assert by_number[3].params in around and by_number[4].params in around
    assert len({space.params_key(c.params) for c in found}) == len(found)  # no policy replayed twice
