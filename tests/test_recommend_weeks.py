"""`recommend --other-seeds` (recommend/weeks.py): the answer and the repository's policy replayed on other
weeks of the mixed workload, and whether the answer holds there."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
from support import SHARED, cli_on, fleet_repo

from gpupolicy.commands import recommend as command
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import executors, neighbours, objective, space, weeks
from gpupolicy.recommend import search as search_module
from gpupolicy.recommend.search import Candidate, search
from gpupolicy.simulate import mixed
from gpupolicy.simulate.traces import read_trace

# The tests' own fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
TRACES = SHARED / "traces"
LIMIT = 150  # the first jobs of each week keep the replays fast
TRACE = REPO / "tools/gpupolicy/data/traces/synthetic-week.csv"


def test_seeds_parse_whole_numbers_once_each_and_refuse_the_rest():
    assert weeks.parse_seeds("1,2") == (1, 2)
    assert weeks.parse_seeds(" 2, 1,2 ") == (2, 1)
    assert weeks.parse_seeds("") == ()
    assert weeks.parse_seeds("-1") is None
    assert weeks.parse_seeds("1,x") is None
    assert weeks.parse_seeds("²") is None  # a digit to str.isdigit, not to int(): refused, not a traceback
    assert weeks.parse_seeds(",".join(map(str, range(weeks.MOST + 1)))) is None


def test_the_command_refuses_other_seeds_it_cannot_replay():
    one_week = cli_on(REPO, "recommend", "--cluster", "prod-us", "--trace", str(TRACE), "--other-seeds", "1")
    assert one_week.returncode == 2 and "a --trace file has one" in one_week.stderr
    garbage = cli_on(REPO, "recommend", "--cluster", "prod-us", "--workload", "mixed", "--other-seeds", "one")
    assert garbage.returncode == 2 and "--other-seeds takes up to" in garbage.stderr


def _args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    parser.add_argument("--repo", default=str(REPO))
    args = parser.parse_args(
        [
            "--cluster",
            "prod-us",
            "--workload",
            "mixed",
            "--traces",
            str(TRACES),
            "--limit",
            str(LIMIT),
            *extra,
        ]
    )
    args.other_seeds = weeks.parse_seeds(args.other_seeds)
    return args


def test_each_other_week_replays_both_policies_on_its_own_jobs():
    if not all(path.is_file() for path in mixed.trace_paths(TRACES)):
        pytest.skip(f"{TRACES} has no ITP and openb traces (../shared not available)")
    cluster = load_fleet(REPO).clusters["prod-us"]
    knob_list = space.knobs(cluster)
    current = space.current_values(knob_list)
    moved = next(iter(neighbours.moves(knob_list, current).values()))[0]
    args = _args("--jobs", "1", "--other-seeds", "1,2")
    judge = command._OtherWeeks(args, cluster, knob_list)
    try:
        found = judge.judge(moved)
        again = judge.judge(moved)  # the repository's replay of each week is kept, the answer's replayed
    finally:
        judge.close()
    assert again == found
    assert [week.seed for week in found] == [1, 2]
    own = command._jobs(args, cluster)
    for week in found:
        jobs = command._jobs(argparse.Namespace(**{**vars(args), "workload_seed": week.seed}), cluster)
        assert week.jobs == len(jobs) and [j.id for j in jobs] != [j.id for j in own]  # another week
        run = executors.Serial(jobs)
        policies = [space.candidate_policy(cluster, knob_list, params) for params in (current, moved)]
        assert run.map([(policy, 1.0) for policy in policies]) == [week.repository, week.recommended]
        assert week.holds == objective.keeps_headlines(week.recommended, week.repository)
        assert week.improves == (
            week.holds and objective.headlines(week.recommended) != objective.headlines(week.repository)
        )
    assert weeks.rows(found)[0][0] == 1 and all(
        row[-1] in ("yes", "yes, better", "no") for row in weeks.rows(found)
    )
    assert (
        command._OtherWeeks(args, cluster, knob_list).judge(current) == []
    )  # the repository's: nothing to replay


class _Judge:
    """Stands for _OtherWeeks: every answer that changes something gets the one week given."""

    def __init__(self, week: weeks.Week, current: dict) -> None:
        self.week, self.current = week, current

    def judge(self, params: dict) -> list:
        return [self.week] if params != self.current else []


def test_an_answer_that_does_not_hold_on_another_week_is_passed_over():
    cluster = load_fleet(REPO).clusters["prod-us"]
    knob_list = space.knobs(cluster)
    jobs = sorted(read_trace(TRACE, "csv").jobs, key=lambda j: (j.submit, j.id))[:LIMIT]
    [repository] = search(cluster, knob_list, [], trials=1, seed=0, batch=1, run=executors.Serial(jobs))
    summary = repository.summary
    useful = summary.window_useful or 0.0
    # an answer better than the repository's policy on its own week: a point more useful utilization
    borrow = next(k for k in knob_list if k.kind == space.BORROW and not k.grid)
    moved = neighbours.moves(knob_list, repository.params)[borrow.name][0]
    # its objective ranks before any replay's (whose first count, keeping the pools' classes, is 0 or 1)
    better = Candidate(
        1, moved, summary=dataclasses.replace(summary, window_useful=useful + 0.01), objective=(-1,)
    )
    assert search_module.improves_on(better, repository)
    worse_elsewhere = weeks.Week(
        1, len(jobs), summary, dataclasses.replace(summary, window_useful=useful - 0.01)
    )
    same_elsewhere = weeks.Week(1, len(jobs), summary, summary)
    # the engine stopped the answer's replay of that week (queues that preempt each other without end)
    stopped_elsewhere = weeks.Week(1, len(jobs), summary, executors.Stopped("the replay ... stopped"))
    assert not stopped_elsewhere.holds and not stopped_elsewhere.improves
    for week, why in (
        (worse_elsewhere, "seed 1 (useful utilization worse)"),
        (stopped_elsewhere, "seed 1 (its replay stopped: the replay ... stopped)"),
        (same_elsewhere, None),
    ):
        judge = _Judge(week, repository.params)
        chosen, rejected = command._first_clean(
            REPO, "prod-us", knob_list, [repository, better], 1, lambda c: c, judge
        )
        if why:
            assert chosen[0].number == 0
            assert rejected == [(1, [f"does not hold on {why}"])]
            assert chosen[2] == []
        else:
            assert chosen[0].number == 1
            assert rejected == [] and chosen[2] == [same_elsewhere]
