"""Figures from a replay: allocation, wait percentiles per queue and tier, preemptions, lost GPU-hours.

Besides the means over the replay: utilization over the arrival window (first to last submission) and while
work is waiting, GPU-hours idle in a pool class while work of that class waits (the brief's "a queue formed
even when accelerators sat idle"), and the work lost to preemption per kind of work (checkpoint loss: what a
victim did since its last checkpoint, `checkpoints.py`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .engine import BUSY_DEVICE_REASON, Result
from .jobs import MILLI
from .policy import job_class

HOUR = 3600


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))
    return float(sorted_values[int(rank) - 1])


@dataclass
class WaitStats:
    jobs: int
    p50: float
    p95: float
    p99: float
    mean: float

    @classmethod
    def of(cls, waits: list[float]) -> WaitStats:
        waits = sorted(waits)
        mean = sum(waits) / len(waits) if waits else 0.0
        return cls(len(waits), percentile(waits, 50), percentile(waits, 95), percentile(waits, 99), mean)


@dataclass
class Summary:
    policy: str
    jobs: int
    completed: int
    never_scheduled: int
    allocation: float  # mean allocated / available GPUs over the replay, 0..1
    allocated_gpu_hours: float
    makespan_hours: float
    wait: WaitStats
    wait_by_queue: dict[str, WaitStats] = field(default_factory=dict)
    wait_by_tier: dict[str, WaitStats] = field(default_factory=dict)
    preemptions: int = 0
    interruptions: int = 0
    lost_to_preemption_gpu_hours: float = 0.0
    lost_to_failures_gpu_hours: float = 0.0
    never_reasons: dict[str, int] = field(default_factory=dict)
    # GPU-time of the work jobs kept (what they asked for, not the cards they held) / capacity
    useful: float = 0.0
    busy_starts: int = 0  # starts that failed on a card whose memory a neighbour held (busy.py)
    starts: int = 0  # every start attempted, the failed ones included
    jobs_crashed_at_start: int = 0  # jobs that failed at start on a busy device at least once
    jobs_tried: int = 0  # jobs that attempted a start (started, or failed at start)
    lost_to_busy_devices: int = 0  # jobs that gave up after failing at start that often
    # mean allocated / available over the arrival window (first to last submission): a policy that does the
    # same work with one long tail does not read as "half the utilization", as the mean over the makespan does
    window_allocation: float | None = None  # None: a summary recorded before the figure existed
    # GPU-time of the work kept that was done inside the arrival window / capacity over the window
    window_useful: float | None = None
    # mean allocated / available over the instants when some work waits (arrived, not running)
    allocation_while_waiting: float | None = None
    # pool class -> GPU-hours its pools had free while work of that class waited (policy.pool_classes)
    idle_while_waiting_gpu_hours: dict[str, float] = field(default_factory=dict)
    # kind of work (the job's `workload`, else its class) -> GPU-hours lost to preemption since the last
    # checkpoint
    checkpoint_loss_gpu_hours: dict[str, float] = field(default_factory=dict)
    # queue -> admitted workloads evicted because their pods were not all running within waitForPodsReady's
    # timeout (reason PodsReadyTimeout): quota that admits more than the pool's cards can hold shows here;
    # None: a summary recorded before the figure existed
    ready_timeouts: dict[str, int] | None = None


def summarize(result: Result) -> Summary:
    waits: list[float] = []
    by_queue: dict[str, list[float]] = defaultdict(list)
    by_tier: dict[str, list[float]] = defaultdict(list)
    reasons: dict[str, int] = defaultdict(int)
    lost_by_work: dict[str, float] = defaultdict(float)
    ready_timeouts: dict[str, int] = defaultdict(int)
    completed = never = interruptions = crashed = tried = 0
    lost = useful = 0
    start = min((r.job.submit for r in result.runs), default=0)
    for run in result.runs:
        lost += run.lost_milli_seconds
        if run.lost_milli_seconds:
            lost_by_work[run.job.workload or job_class(run.job)] += run.lost_milli_seconds / MILLI / HOUR
        useful += run.size[0] * (run.job.duration - run.remaining)  # work kept, at the size the job asked for
        interruptions += run.interruptions
        if run.ready_timeouts:
            ready_timeouts[run.queue] += run.ready_timeouts
        crashed += run.busy_starts > 0
        tried += run.busy_starts > 0 or run.first_start >= 0
        if run.first_start < 0:
            never += 1
            reasons[run.never_reason or "never admitted"] += 1
            continue
        if run.finished >= 0:
            completed += 1
        wait = (run.first_start - run.job.submit) / HOUR * 60  # minutes
        waits.append(wait)
        by_queue[run.queue].append(wait)
        by_tier[run.job.tier or result.queues.get(run.queue).tier or "untiered"].append(wait)
    allocated, available = _integrals(result.timeline, start, result.end)
    last = max((r.job.submit for r in result.runs), default=start)
    in_window, window = _integrals(result.timeline, start, last)
    return Summary(
        policy=result.policy,
        jobs=len(result.runs),
        completed=completed,
        never_scheduled=never,
        allocation=allocated / available if available else 0.0,
        useful=useful / available if available else 0.0,
        allocated_gpu_hours=allocated / MILLI / HOUR,
        makespan_hours=(result.end - start) / HOUR,
        wait=WaitStats.of(waits),
        wait_by_queue={q: WaitStats.of(v) for q, v in sorted(by_queue.items())},
        wait_by_tier={t: WaitStats.of(v) for t, v in sorted(by_tier.items())},
        preemptions=result.preemptions,
        interruptions=interruptions,
        lost_to_preemption_gpu_hours=lost / MILLI / HOUR,
        lost_to_failures_gpu_hours=result.failure_milli_seconds / MILLI / HOUR,
        never_reasons=dict(reasons),
        busy_starts=result.busy_starts,
        starts=result.starts,
        jobs_crashed_at_start=crashed,
        jobs_tried=tried,
        lost_to_busy_devices=reasons.get(BUSY_DEVICE_REASON, 0),
        window_allocation=in_window / window if window else 0.0,
        window_useful=result.useful_in_window / window if window else 0.0,
        allocation_while_waiting=allocation_while_waiting(result.class_timeline, result.end),
        idle_while_waiting_gpu_hours=idle_while_waiting(result.class_timeline, result.end),
        checkpoint_loss_gpu_hours=dict(sorted(lost_by_work.items())),
        ready_timeouts=dict(sorted(ready_timeouts.items())),
    )


def _integrals(timeline: list[tuple[int, int, int]], start: int, end: int) -> tuple[float, float]:
    """Time integrals of allocated and available milli-GPUs between start and end."""
    allocated = available = 0.0
    for (t0, alloc, avail), (t1, _, _) in zip(timeline, [*timeline[1:], (end, 0, 0)], strict=True):
        lo, hi = max(t0, start), min(t1, end)
        if hi > lo:
            allocated += alloc * (hi - lo)
            available += avail * (hi - lo)
    return allocated, available


def _spans(class_timeline: list, end: int):
    """Each recorded point of a class timeline with how long it held (to the next point, or the end)."""
    for (t0, point), (t1, _) in zip(class_timeline, [*class_timeline[1:], (end, None)], strict=True):
        if t1 > t0:
            yield point, t1 - t0


def idle_while_waiting(class_timeline: list, end: int) -> dict[str, float]:
    """Pool class -> GPU-hours of its pools free (available - allocated) while work of that class waited."""
    idle: dict[str, float] = {}
    for point, seconds in _spans(class_timeline, end):
        for kind, (allocated, available, waiting) in point.items():
            idle.setdefault(kind, 0.0)
            if waiting and available > allocated:
                idle[kind] += (available - allocated) * seconds / MILLI / HOUR
    return dict(sorted(idle.items()))


def allocation_while_waiting(class_timeline: list, end: int) -> float:
    """Allocated / available over the instants when work of any class waited (0 when none ever did)."""
    allocated = available = 0.0
    for point, seconds in _spans(class_timeline, end):
        if any(waiting for _, _, waiting in point.values()):
            allocated += sum(a for a, _, _ in point.values()) * seconds
            available += sum(v for _, v, _ in point.values()) * seconds
    return allocated / available if available else 0.0
