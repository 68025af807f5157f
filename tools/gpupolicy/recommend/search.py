"""The search: Optuna's TPE sampler (seeded) asked for candidates in fixed-size batches, pruning on partial
replays.

Each batch: ask `batch` trials, replay each candidate on the first half of the workload, report that score to
its trial and let the MedianPruner stop those below the median of earlier trials at the same step; replay the
rest on the whole workload and tell Optuna the result. A survivor's whole replay starts as soon as its partial
result is in (executors: `chain`), while the batch's other partial replays still run. Sampling happens only
between batches, in this process, so the executor (serial, process pool, Ray) never changes what is sampled:
same seed, same candidates, same numbers. Trial 0 is the repository's own policy, so the ranking always
shows where today's policy stands. Every second trial is not TPE's but a hill-climbing step: one move from
the best candidate so far that improves on the repository's policy (neighbours.py), enqueued into the same
study so TPE learns from it too, and replayed whole at once. Why Optuna, TPE and this pruning:
docs/decisions/0044-recommend-search-method.md; why the climb:
docs/decisions/0101-recommend-climbs-beside-tpe.md.

Over several weeks (`run` an executors.Weeks, recommend --search-seeds), a whole replay is every week's: a
candidate ranks by its figures over all of them and improves on the repository's policy only where it does on
every week (decision 0102). The pruner still reads the half replay of the search's own week.

A candidate whose replay the engine stops (queues that preempt each other without end) is told to Optuna as
failed and ranked last, with the engine's message; the repository's own policy stopping is the command's
error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import ToolError
from ..model import Cluster
from ..simulate.metrics import Summary
from ..simulate.placement import DEFAULT_PLACEMENT
from ..simulate.policy import SimPolicy, pool_classes
from . import neighbours, objective
from .executors import Stopped, Weekly, runner
from .space import (
    BORROW,
    COHORT,
    LAYOUT,
    LEND,
    NOMINAL,
    REPLICAS,
    Knob,
    candidate_policy,
    changes,
    current_values,
    params_key,
    resolved,
)
from .targets import Target, shortfall, worst_waits

PARTIAL = 0.5  # the share of the workload a candidate is first replayed on, for the pruner


@dataclass
class Candidate:
    number: int  # the Optuna trial number; 0 is the repository's policy
    params: dict[str, int | str]
    pruned: bool = False
    summary: Summary | None = None  # the whole workload's (None when pruned)
    others: tuple[Summary, ...] = ()  # the other searched weeks' (recommend --search-seeds), in seed order
    waits: dict[str, float] = field(default_factory=dict)  # target -> worst wait of its queues, minutes
    score: float = 0.0
    reverted: int = 0  # changes `simplify` took back because they did not help
    objective: tuple = ()  # objective.key of the whole replay (empty when pruned)
    stopped: str = ""  # why the engine stopped its replay (executors.Stopped); ranked last

    @property
    def weeks(self) -> tuple[Summary, ...]:
        """Every week it was replayed on whole: the search's own first."""
        return (self.summary, *self.others) if self.summary else ()

    @property
    def meets_targets(self) -> bool:
        placed = all(summary.never_scheduled == 0 for summary in self.weeks)
        return bool(self.summary) and placed and self.miss == 0.0

    miss: float = 0.0  # summed relative shortfall against the targets

    @property
    def worst_wait(self) -> float:
        return max(self.waits.values(), default=0.0)


def earns_its_place(kept: Candidate, without: Candidate) -> bool:
    """Whether `kept` (with a change) is strictly better on the objective than `without` (the change taken
    back): the objective compares at two significant figures, so a change that moves a figure by replay noise
    only does not earn its place in a pull request."""
    return objective.better(kept.objective, without.objective)


def score(summary: Summary, waits: dict[str, float], targets: Sequence[Target], keeps: bool = True) -> float:
    """The scalar Optuna's sampler and pruner follow (`objective.guide`); the ranking uses `objective.key`."""
    return objective.guide(summary, waits, targets, keeps)


def keeps_classes(policy: SimPolicy, classes: dict[str, str]) -> bool:
    """Whether the candidate's pools have the repository's classes of work (`objective`, count 0)."""
    return pool_classes(policy) == classes


def distributions(knob_list: list[Knob]) -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    result = {}
    for knob in knob_list:
        if knob.grid:
            result[knob.name] = CategoricalDistribution(knob.grid)
        elif knob.kind in (COHORT, LAYOUT):
            result[knob.name] = CategoricalDistribution(knob.choices)
        elif knob.kind in (BORROW, LEND, NOMINAL, REPLICAS):
            result[knob.name] = IntDistribution(knob.low, knob.high)
    return result


def search(
    cluster: Cluster,
    knob_list: list[Knob],
    targets: Sequence[Target],
    trials: int,
    seed: int,
    batch: int,
    run,
    placement: str = DEFAULT_PLACEMENT,
) -> list[Candidate]:
    """`trials` candidates, evaluated by `run` (an executor of executors.py, or a map function); sorted best
    first (see `ranked`)."""
    import optuna

    optuna.logging.set_verbosity(logging.WARNING)
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=batch, n_warmup_steps=0),
    )
    study.enqueue_trial(current_values(knob_list))
    space = distributions(knob_list)
    classes = pool_classes(candidate_policy(cluster, knob_list, {}, placement))
    candidates: list[Candidate] = []
    run = runner(run)

    def failed(trial, replayed: Stopped) -> None:
        """A trial whose replay the engine stopped: failed to Optuna, ranked last (`_stopped`)."""
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        candidates.append(_stopped(trial.number, resolved(knob_list, trial.params), replayed))

    def whole_unless_pruned(asked: list, policies: list[SimPolicy], climbing: list[bool]):
        """The batch's follow-up for a partial replay: the whole replay, or none once the pruner stopped the
        trial. MedianPruner reads only the trials earlier batches completed, so the order in which the
        batch's partial results come back changes no verdict. A climbing step was replayed whole at once:
        it has no follow-up."""

        def then(index: int, partial: Summary) -> tuple[SimPolicy, float] | None:
            trial, policy = asked[index], policies[index]
            if climbing[index]:
                return None
            if isinstance(partial, Stopped):
                return failed(trial, partial)
            keeps = keeps_classes(policy, classes)
            trial.report(score(partial, worst_waits(list(targets), policy, partial), targets, keeps), step=0)
            if not trial.should_prune():
                return (policy, 1.0)
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            candidates.append(Candidate(trial.number, resolved(knob_list, trial.params), pruned=True))
            return None

        return then

    climb = neighbours.Climb(knob_list, seed)
    while len(candidates) < trials:
        size = min(batch, trials - len(candidates))
        incumbent = worth_checking(candidates, 1)[0].params if candidates else current_values(knob_list)
        offered = climb.next(_local_share(len(candidates), size), incumbent)
        for params in offered:
            study.enqueue_trial(params)
        steps = {params_key(params) for params in offered}
        asked = [study.ask(space) for _ in range(size)]
        for trial in asked:
            climb.asked(trial.params)
        # a climbing step skips the pruner: one move changes a figure a little, and the median of TPE's
        # scattered half replays is no bar for that (decision 0101)
        climbing = [params_key(resolved(knob_list, trial.params)) in steps for trial in asked]
        policies = [candidate_policy(cluster, knob_list, trial.params, placement) for trial in asked]
        tasks = [(policy, 1.0 if step else PARTIAL) for policy, step in zip(policies, climbing, strict=True)]
        firsts, follow_ups = run.chain(tasks, whole_unless_pruned(asked, policies, climbing))
        wholes = [a if step else b for a, b, step in zip(firsts, follow_ups, climbing, strict=True)]
        for trial, policy, summary in zip(asked, policies, wholes, strict=True):
            if summary is None:
                continue
            if isinstance(summary, Stopped):
                failed(trial, summary)
                continue
            candidate = _whole(
                trial.number,
                resolved(knob_list, trial.params),
                summary,
                policy,
                targets,
                keeps=keeps_classes(policy, classes),
            )
            study.tell(trial, candidate.score)
            candidates.append(candidate)
    return ranked(candidates)


def _local_share(asked: int, size: int) -> int:
    """How many of the next `size` trials are hill-climbing steps (neighbours.py): every second trial over
    the whole search, whatever the batch size."""
    return (asked + size) // 2 - asked // 2


def _stopped(number: int, params: dict, replayed: Stopped, reverted: int = 0) -> Candidate:
    """A candidate whose replay stopped: after every whole replay on the objective (`objective.STOPPED`), so
    no search or simplification step adopts it. The repository's own policy (trial 0) stopping ends the
    command: there is nothing to compare a candidate with."""
    if number == 0:
        raise ToolError(replayed.reason)
    return Candidate(number, params, stopped=replayed.reason, reverted=reverted, objective=objective.STOPPED)


def _whole(
    number: int,
    params: dict,
    replayed: Summary | Weekly,
    policy: SimPolicy,
    targets: Sequence[Target],
    reverted: int = 0,
    keeps: bool = True,
) -> Candidate:
    """A candidate replayed whole, on one week or on every searched week (Weekly), with its place on the
    objective over them (`objective.key_over`) and each target's worst wait over them."""
    summaries = replayed.summaries if isinstance(replayed, Weekly) else (replayed,)
    weeks = [(summary, worst_waits(list(targets), policy, summary)) for summary in summaries]
    waits = {name: max(week[name] for _, week in weeks) for name in weeks[0][1]}
    return Candidate(
        number,
        params,
        summary=summaries[0],
        others=summaries[1:],
        waits=waits,
        score=objective.guide_over(weeks, targets, keeps),
        miss=shortfall(list(targets), waits),
        reverted=reverted,
        objective=objective.key_over(weeks, targets, keeps),
    )


def simplify(
    cluster: Cluster,
    knob_list: list[Knob],
    targets: Sequence[Target],
    best: Candidate,
    run,
    placement: str = DEFAULT_PLACEMENT,
) -> Candidate:
    """The candidate with each change taken back that does not earn its place (`earns_its_place`): TPE moves
    every knob, most of them to no effect, and a pull request should change only what matters. Each change is
    first taken back alone, all in one batch (the executor replays them side by side); the ones that did not
    help alone are then taken back together, and that is the answer if the objective is no worse than
    `best`'s. Where it is worse (changes that help only together), they are taken back one at a time in knob
    order, each kept out only where the objective without it is no worse. Either way the result is never
    worse on the objective than `best` (and a `best` strictly better than the repository's policy stays so). A
    change that cannot be taken back alone (the nominal quotas would no longer fit their pool, or a lending
    limit would have to come down with them: `space.resolved`) stays. Deterministic, like the search."""
    backs = _TakeBacks(cluster, knob_list, targets, best, runner(run), placement)
    alone = [knob.name for knob, _ in changes(knob_list, best.params)]
    alone = [name for name in alone if backs.takes_back(backs.without(best.params, [name]))]
    singles = backs.replayed([backs.without(best.params, [name]) for name in alone])
    idle = [name for name, trial in zip(alone, singles, strict=True) if not earns_its_place(best, trial)]
    if len(idle) == 1:
        return singles[alone.index(idle[0])]
    everything = backs.without(best.params, idle)
    if len(idle) > 1 and backs.takes_back(everything):
        # the one-at-a-time walk's first replays go beside it, in case it does not do
        spare = [params for _, params in backs.round(backs.chain(best, idle), backs.width - 1)]
        together = backs.replayed([everything, *spare])[0]
        if not earns_its_place(best, together):
            return together
    return _one_at_a_time(best, idle, backs)


class _TakeBacks:
    """The replays `simplify` asks for: each variant (a set of changes taken back) replayed once, whatever
    step asks for it again (the one-at-a-time walk's first step is a single change taken back, already
    replayed), and up to `width` of them side by side (the executor's workers)."""

    def __init__(self, cluster: Cluster, knob_list, targets, best: Candidate, run, placement: str) -> None:
        self.cluster, self.knob_list, self.targets, self.best = cluster, knob_list, list(targets), best
        self.run, self.placement = run, placement
        self.width = run.width
        self.changed = len(changes(knob_list, best.params))
        self.classes = pool_classes(candidate_policy(cluster, knob_list, {}, placement))
        self.done: dict[tuple, Candidate] = {}

    def without(self, params: dict, names: list[str]) -> dict:
        return params | {knob.name: knob.current for knob in self.knob_list if knob.name in names}

    def takes_back(self, params: dict) -> bool:
        return resolved(self.knob_list, params) == params

    def replayed(self, variants: list[dict]) -> list[Candidate]:
        """Each variant (params) as a whole replay; the ones not replayed yet in one batch."""
        missing = {params_key(params): params for params in variants}
        missing = [params for key, params in missing.items() if key not in self.done]
        policies = [candidate_policy(self.cluster, self.knob_list, p, self.placement) for p in missing]
        summaries = self.run.map([(policy, 1.0) for policy in policies]) if missing else []
        for params, policy, summary in zip(missing, policies, summaries, strict=True):
            if isinstance(summary, Stopped):
                self.done[params_key(params)] = _stopped(
                    self.best.number, params, summary, self.reverted(params)
                )
                continue
            self.done[params_key(params)] = _whole(
                self.best.number,
                params,
                summary,
                policy,
                self.targets,
                self.reverted(params),
                keeps_classes(policy, self.classes),
            )
        return [self.done[params_key(params)] for params in variants]

    def reverted(self, params: dict) -> int:
        """The changes taken back in the variant, counting those `best` had taken back already: each one
        taken back from `best` is one change fewer (a variant resolves to itself: `takes_back`)."""
        return self.best.reverted + self.changed - len(changes(self.knob_list, params))

    def chain(self, current: Candidate, names: list[str]) -> list[tuple[int, dict]]:
        """The walk's steps from `current` over `names`, were every change taken back: (position in `names`,
        params) of each name that can be taken back on top of the ones before it."""
        steps, params = [], current.params
        for position, name in enumerate(names):
            step = self.without(params, [name])
            if self.takes_back(step):
                params = step
                steps.append((position, params))
        return steps

    def round(self, steps: list[tuple[int, dict]], width: int) -> list[tuple[int, dict]]:
        """The first steps, up to the `width`-th one not replayed yet (all of them where fewer are)."""
        fresh = 0
        for index, (_, params) in enumerate(steps):
            if fresh == width:
                return steps[:index]
            fresh += params_key(params) not in self.done
        return steps


def _one_at_a_time(best: Candidate, idle: list[str], backs: _TakeBacks) -> Candidate:
    """`simplify`'s last resort: each change in `idle` taken back in turn, kept out where the objective
    without it is no worse. Each round replays the next steps of the walk side by side, as they will be asked
    if every change before them stays out (`_TakeBacks.chain`); a change that stays ends the round, and the
    walk goes on from it. The same answers as one replay after the other."""
    current, position = best, 0
    while position < len(idle):
        steps = backs.chain(current, idle[position:])
        if not steps:
            break
        round_steps = backs.round(steps, backs.width)
        start = position
        trials = backs.replayed([params for _, params in round_steps])
        for (offset, _), trial in zip(round_steps, trials, strict=True):
            position = start + offset + 1
            if earns_its_place(current, trial):
                break  # this change stays: the steps after it assumed it went
            current = trial
    return current


def ranked(candidates: list[Candidate]) -> list[Candidate]:
    """Whole replays first, by the objective (`objective.key`), whole ties by trial number: trial 0, the
    repository's policy, comes before every candidate that is not strictly better than it. Pruned and stopped
    last."""

    def key(c: Candidate):
        return (1, (), c.number) if c.summary is None else (0, c.objective, c.number)

    return sorted(candidates, key=key)


def worth_checking(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """The ranked candidates to offer, in order: at most `limit` of those strictly better on the objective
    than the repository's policy (trial 0) and on the headline figures (`improves_on`),
    then the repository's policy itself, so a recommendation is never worse than what the repository has
    ("keep the repository's policy" when nothing beats it)."""
    repository = next(c for c in candidates if c.number == 0)
    better = [c for c in ranked(list(candidates)) if c.number != 0 and improves_on(c, repository)]
    return [*better[:limit], repository]


def improves_on(candidate: Candidate, repository: Candidate) -> bool:
    """Strictly better than the repository's policy on the objective, no worse on any headline figure and
    strictly better on one, on every week searched (`objective.improves_each_week`)."""
    return (
        candidate.summary is not None
        and objective.better(candidate.objective, repository.objective)
        and objective.improves_each_week(candidate.weeks, repository.weeks)
    )


def never_worse(chosen: Candidate, repository: Candidate) -> Candidate:
    """`chosen` when it improves on the repository's policy (`improves_on`), else the latter."""
    return chosen if improves_on(chosen, repository) else repository


def pareto_front(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The whole replays no other beats on both useful utilization (higher) and worst wait (lower)."""
    done = [c for c in candidates if c.summary is not None]
    front = [
        c
        for c in done
        if not any(
            o.summary.useful >= c.summary.useful
            and o.worst_wait <= c.worst_wait
            and (o.summary.useful > c.summary.useful or o.worst_wait < c.worst_wait)
            for o in done
        )
    ]
    return sorted(front, key=lambda c: (c.summary.useful, c.number))
