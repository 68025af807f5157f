"""The search: Optuna's TPE sampler (seeded) asked for candidates in fixed-size batches, pruning on partial replays.

Each batch: ask `batch` trials, replay each candidate on the first half of the workload, report that score to its
trial and let the MedianPruner stop those below the median of earlier trials at the same step; replay the rest
on the whole workload and tell Optuna the result. Sampling happens only between batches, in this process, so the
executor (serial, process pool, Ray) never changes what is sampled: same seed, same candidates, same numbers.
Trial 0 is the repository's own policy, so the ranking always shows where today's policy stands.
Why Optuna, TPE and this pruning: docs/decisions/0044-recommend-search-method.md.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import Cluster
from ..simulate.metrics import Summary
from ..simulate.placement import DEFAULT_PLACEMENT
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
    waits: dict[str, float] = field(default_factory=dict)  # target -> worst wait of its queues, minutes
    score: float = 0.0
    reverted: int = 0  # changes `simplify` took back because they did not help

    @property
    def meets_targets(self) -> bool:
        return bool(self.summary) and self.summary.never_scheduled == 0 and self.miss == 0.0

    miss: float = 0.0  # summed relative shortfall against the targets

    @property
    def worst_wait(self) -> float:
        return max(self.waits.values(), default=0.0)


# A change must earn its place in a pull request: taking it back must cost at least half a point of useful
# utilization, or bring one target's worst wait further past its bound by 1% of that bound (and 1% of how far
# past it already is), or a job placed, or meeting every target; anything less is replay noise. Each count, and
# each target, is judged on its own: a sum would let an unreachable target (a p95 of 8 hours against 15
# minutes) make every gain elsewhere look like noise, a training p50 brought under its bound included.
MIN_GAIN = 0.005
MIN_RELATIVE_GAIN = 0.01


def earns_its_place(kept: Candidate, without: Candidate, targets: Sequence[Target]) -> bool:
    """Whether `kept` (with the change) beats `without` (the change taken back) by more than noise on a count."""
    return (kept.summary.useful - without.summary.useful >= MIN_GAIN
            or any(_closer_to(target, kept, without) for target in targets)
            or without.summary.never_scheduled > kept.summary.never_scheduled
            or (kept.meets_targets and not without.meets_targets))


def _closer_to(target: Target, kept: Candidate, without: Candidate) -> bool:
    """Whether `kept`'s worst wait for `target` is closer to (or within) its bound than `without`'s, by more
    than noise: 1% of the bound, and 1% of how far past the bound `kept` still is."""
    def past(candidate: Candidate) -> float:
        return max(0.0, candidate.waits.get(str(target), 0.0) - target.minutes)
    gain = past(without) - past(kept)
    return gain > 0 and gain >= MIN_RELATIVE_GAIN * max(target.minutes, past(kept))


def score(summary: Summary, waits: dict[str, float], targets: Sequence[Target]) -> float:
    """Useful utilization, less the targets' shortfall and the share of jobs never placed (both as fractions)."""
    never = summary.never_scheduled / summary.jobs if summary.jobs else 0.0
    return summary.useful - shortfall(list(targets), waits) - never


def distributions(knob_list: list[Knob]) -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    result = {}
    for knob in knob_list:
        if knob.kind in (COHORT, LAYOUT):
            result[knob.name] = CategoricalDistribution(knob.choices)
        elif knob.kind in (BORROW, LEND, NOMINAL, REPLICAS):
            result[knob.name] = IntDistribution(knob.low, knob.high)
    return result


def search(cluster: Cluster, knob_list: list[Knob], targets: Sequence[Target], trials: int, seed: int,
           batch: int, run, placement: str = DEFAULT_PLACEMENT) -> list[Candidate]:
    """`trials` candidates, evaluated by `run` (an executor's map); sorted best first (see `ranked`)."""
    import optuna

    optuna.logging.set_verbosity(logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed),
                                pruner=optuna.pruners.MedianPruner(n_startup_trials=batch, n_warmup_steps=0))
    study.enqueue_trial(current_values(knob_list))
    space = distributions(knob_list)
    candidates: list[Candidate] = []
    while len(candidates) < trials:
        asked = [study.ask(space) for _ in range(min(batch, trials - len(candidates)))]
        policies = [candidate_policy(cluster, knob_list, trial.params, placement) for trial in asked]
        partial = run([(policy, PARTIAL) for policy in policies])
        survivors = []
        for trial, policy, summary in zip(asked, policies, partial, strict=True):
            trial.report(score(summary, worst_waits(list(targets), policy, summary), targets), step=0)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                candidates.append(Candidate(trial.number, resolved(knob_list, trial.params), pruned=True))
            else:
                survivors.append((trial, policy))
        for (trial, policy), summary in zip(survivors, run([(p, 1.0) for _, p in survivors]), strict=True):
            waits = worst_waits(list(targets), policy, summary)
            value = score(summary, waits, targets)
            study.tell(trial, value)
            candidates.append(Candidate(trial.number, resolved(knob_list, trial.params), summary=summary, waits=waits,
                                        score=value, miss=shortfall(list(targets), waits)))
    return ranked(candidates)


def simplify(cluster: Cluster, knob_list: list[Knob], targets: Sequence[Target], best: Candidate, run,
             placement: str = DEFAULT_PLACEMENT) -> Candidate:
    """The candidate with each change taken back, in knob order, that does not earn its place (`earns_its_place`):
    TPE moves every knob, most of them to no effect, and a pull request should change only what matters.
    A change that cannot be taken back alone (the nominal quotas would no longer fit their pool, or a lending
    limit would have to come down with them: `space.resolved`) stays. Deterministic, like the search."""
    current = best
    for knob, _ in changes(knob_list, best.params):
        params = current.params | {knob.name: knob.current}
        if resolved(knob_list, params) != params:
            continue
        policy = candidate_policy(cluster, knob_list, params, placement)
        summary = run([(policy, 1.0)])[0]
        waits = worst_waits(list(targets), policy, summary)
        trial = Candidate(best.number, params, summary=summary, waits=waits, score=score(summary, waits, targets),
                          miss=shortfall(list(targets), waits), reverted=current.reverted + 1)
        if not earns_its_place(current, trial, targets):
            current = trial
    return current


def ranked(candidates: list[Candidate]) -> list[Candidate]:
    """Whole replays first; among them those meeting every target, then by score (useful utilization, which is
    all of it for a candidate meeting the targets), worst wait and trial number (ties break the same way)."""
    def key(c: Candidate):
        if c.summary is None:
            return (2, 0.0, 0.0, c.number)
        return (0 if c.meets_targets else 1, -round(c.score, 9), round(c.worst_wait, 6), c.number)
    return sorted(candidates, key=key)


def pareto_front(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The whole replays no other beats on both useful utilization (higher) and worst wait (lower)."""
    done = [c for c in candidates if c.summary is not None]
    front = [c for c in done if not any(o.summary.useful >= c.summary.useful and o.worst_wait <= c.worst_wait
                                        and (o.summary.useful > c.summary.useful or o.worst_wait < c.worst_wait)
                                        for o in done)]
    return sorted(front, key=lambda c: (c.summary.useful, c.number))
