"""The one objective `recommend` ranks candidates by: lexicographic, from the figures a replay's Summary has.

In order (each count decides only where every count before it ties):
0. whether the candidate keeps every pool's class of work (`simulate.policy.pool_classes`: inference or
   training, from the nominal quota held there) as the repository's policy has it. The idle figure below is
   counted per class, so a candidate that hands a training pool's quota to inference queues would stop
   counting training's wait for that pool's idle cards, and read better for it; such candidates rank after
   every candidate that keeps the classes (and so after the repository's policy);
1. wait targets met (more is better), then jobs never placed (fewer): a policy that never places a job can
   show short waits for the jobs it does place, so "every job placed" counts with the targets;
2. GPU-hours idle while work of the same pool class waits (`Summary.idle_while_waiting_gpu_hours`, summed
   over the classes): the brief's "a queue formed even when accelerators sat idle";
3. tier waits (`Summary.wait_by_tier`): the production tier's p95 first, then the worst p95 of the other
   tiers, then the p95 over every job (always three counts, so two candidates compare count for count even
   where one of them placed nothing in some tier);
4. GPU-hours lost to preemption (`Summary.lost_to_preemption_gpu_hours`);
5. useful utilization over the arrival window (`Summary.window_useful`, higher is better): a tie-break only.
A candidate whose replay the engine stopped has no figures: its key (`STOPPED`) comes after every other.
Every figure is rounded to two significant figures (and figures under one GPU-hour or minute count as 0)
before it is compared, so replay noise (a p95 of 94 minutes against 95) ties and the next count decides;
`ranked` in search.py then breaks whole ties by trial number, so trial 0, the repository's policy, wins them.
Why lexicographic and why these counts: docs/decisions/0092-recommend-objective-and-lending.md.

Beside the ranking, a guard (`improves_headlines`): a candidate is offered only where it is at least as good
as the repository's policy on each headline figure of the brief's table and strictly better on one, at the
precision the table prints it: useful utilization over the window (0.1 point), the wait p95 (0.1 hour),
the production tier's p95 (one minute), starts failed on a busy device and jobs never placed. The
lexicographic order may trade a lower count for a higher one; a pull request that makes a headline figure
worse than today's is not one to propose (decision 0094).

A search over several weeks (`recommend --search-seeds`, decision 0102) ranks a candidate by `key_over` its
weeks (counts and GPU-hours summed, waits and utilization averaged) and guards each week
(`improves_each_week`); over one week both are the single-week key and guard exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..simulate.metrics import Summary
from .targets import Target

WeekFigures = tuple[Summary, Mapping[str, float]]  # one week's replay and each target's worst wait there

PRODUCTION = "production"
SIGNIFICANT = 2  # figures compared at two significant digits: closer than that is replay noise
FLOOR = 1.0  # below one GPU-hour or minute a figure counts as 0


def coarse(value: float) -> float:
    """`value` at SIGNIFICANT significant figures; 0 below FLOOR (deterministic: a function of the value)."""
    if abs(value) < FLOOR:
        return 0.0
    digits = SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))
    return round(value, digits)


def targets_met(targets: Sequence[Target], waits: Mapping[str, float]) -> int:
    return sum(1 for t in targets if waits.get(str(t), 0.0) <= t.minutes)


def idle_while_waiting(summary: Summary) -> float:
    return sum((summary.idle_while_waiting_gpu_hours or {}).values())


def tier_p95s(summary: Summary) -> tuple[float, float, float]:
    """The production tier's p95 wait (0 when it placed nothing), the worst other tier's, every job's."""
    tiers = summary.wait_by_tier or {}
    production = tiers[PRODUCTION].p95 if PRODUCTION in tiers else 0.0
    others = max((stats.p95 for name, stats in tiers.items() if name != PRODUCTION), default=0.0)
    return production, others, summary.wait.p95


def key(
    summary: Summary, waits: Mapping[str, float], targets: Sequence[Target], keeps_classes: bool = True
) -> tuple:
    """The candidate's place on the objective: a smaller tuple is better (see the module docstring)."""
    return key_over([(summary, waits)], targets, keeps_classes)


def key_over(weeks: Sequence[WeekFigures], targets: Sequence[Target], keeps_classes: bool = True) -> tuple:
    """`key` over the weeks a candidate was replayed on (recommend --search-seeds), each week's (summary,
    worst waits): counts and GPU-hours summed, waits and utilization the weeks' mean, so one week's gain can
    outweigh another's smaller loss on the ranking (the guard, `improves_each_week`, then refuses a loss on
    any week's headline figures). On one week it is that week's figures as they are."""
    count = len(weeks)
    p95s = [tier_p95s(summary) for summary, _ in weeks]
    return (
        0 if keeps_classes else 1,
        -sum(targets_met(targets, waits) for _, waits in weeks),
        sum(summary.never_scheduled for summary, _ in weeks),
        coarse(sum(idle_while_waiting(summary) for summary, _ in weeks)),
        *(coarse(sum(tiers[i] for tiers in p95s) / count) for i in range(3)),
        coarse(sum(summary.lost_to_preemption_gpu_hours for summary, _ in weeks)),
        -round(sum(summary.window_useful or 0.0 for summary, _ in weeks) / count, 3),
    )


# the key of a candidate whose replay the engine stopped (search._stopped): after every whole replay's, whose
# first count is 0 or 1
STOPPED = (2,)


HEADLINES = ("useful utilization", "wait p95", "production p95", "busy starts", "jobs never placed")


def headlines(summary: Summary) -> tuple[float, ...]:
    """The brief's headline figures (named in HEADLINES, in this order) at the precision its table prints
    them, each smaller-is-better."""
    production = tier_p95s(summary)[0]
    return (
        -round((summary.window_useful or 0.0) * 100, 1),  # useful utilization over the window, points
        round(summary.wait.p95 / 60, 1),  # wait p95, hours
        round(production),  # production tier's p95, minutes
        summary.busy_starts,
        summary.never_scheduled,
    )


def keeps_headlines(candidate: Summary, repository: Summary) -> bool:
    """Whether `candidate` is no worse than `repository` on every headline figure (`headlines`)."""
    return all(c <= r for c, r in zip(headlines(candidate), headlines(repository), strict=True))


def improves_headlines(candidate: Summary, repository: Summary) -> bool:
    """No worse than `repository` on every headline figure and strictly better on at least one."""
    return keeps_headlines(candidate, repository) and headlines(candidate) != headlines(repository)


def improves_each_week(candidate: Sequence[Summary], repository: Sequence[Summary]) -> bool:
    """Over the weeks both were replayed on, in the same order: no worse than the repository's policy on any
    week's headline figures, and strictly better on one figure of one week."""
    pairs = list(zip(candidate, repository, strict=True))
    return all(keeps_headlines(c, r) for c, r in pairs) and any(
        headlines(c) != headlines(r) for c, r in pairs
    )


def better(first: tuple, second: tuple) -> bool:
    """Whether the objective key `first` is strictly better than `second`."""
    return first < second


def guide(
    summary: Summary, waits: Mapping[str, float], targets: Sequence[Target], keeps_classes: bool = True
) -> float:
    """One number that follows the objective's first counts, for Optuna's sampler and pruner (they need a
    scalar; the ranking itself uses `key`): targets met, less the share of jobs never placed, less the idle
    GPU-hours as a share of what was allocated, less the production p95 as a share of a week. Higher is
    better."""
    never = summary.never_scheduled / summary.jobs if summary.jobs else 0.0
    idle = idle_while_waiting(summary) / max(summary.allocated_gpu_hours, 1.0)
    production = tier_p95s(summary)[0] / (7 * 24 * 60)
    penalty = 0 if keeps_classes else len(targets) + 3  # below every candidate that keeps the classes
    return targets_met(targets, waits) - never - min(idle, 1.0) - min(production, 1.0) - penalty


def guide_over(weeks: Sequence[WeekFigures], targets: Sequence[Target], keeps_classes: bool = True) -> float:
    """`guide` as the weeks' mean (recommend --search-seeds); one week's as it is."""
    return sum(guide(summary, waits, targets, keeps_classes) for summary, waits in weeks) / len(weeks)
