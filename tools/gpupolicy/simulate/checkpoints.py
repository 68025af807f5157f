"""Checkpoint intervals per kind of work: what a preempted job keeps (engine: the work since its last
checkpoint is lost, the rest kept) when its trace gives no interval of its own.

A trace row's `checkpoint` column wins. Otherwise a job takes the interval of its `workload` (training,
inference, notebook, batch), or of its class (`policy.job_class`: training, inference) when it names none.
The default assumes what the brief's training jobs do (a checkpoint every hour) and nothing for inference and
notebooks, whose pods restart from scratch; `gpupolicy simulate --checkpoint training=30m,batch=0` sets them.
These are assumptions, not measurements: the public traces (ITP, openb) record no checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .failures import parse_duration
from .jobs import Job
from .policy import job_class

DEFAULT_INTERVALS: dict[str, int] = {"training": 3600, "batch": 3600, "inference": 0, "notebook": 0}


def parse_intervals(text: str) -> dict[str, int]:
    """`training=1h,batch=30m` -> {kind: seconds} over the defaults; a ValueError names a malformed item."""
    intervals = dict(DEFAULT_INTERVALS)
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, sep, value = item.partition("=")
        if not sep or not kind:
            raise ValueError(f"--checkpoint: {item!r} is not WORKLOAD=DURATION, e.g. training=1h")
        seconds = parse_duration(value)
        if seconds is None:
            raise ValueError(f"--checkpoint: {value!r} is not a duration such as 30m, 1h or 0")
        intervals[kind.strip()] = seconds
    return intervals


def interval_of(job: Job, intervals: Mapping[str, int]) -> int:
    if job.checkpoint > 0:
        return job.checkpoint
    if job.workload in intervals:
        return intervals[job.workload]
    return intervals.get(job_class(job), 0)


def with_checkpoints(jobs: Sequence[Job], intervals: Mapping[str, int]) -> list[Job]:
    """The jobs with the interval each one checkpoints at (unchanged where it is already that). A ValueError
    names a kind of work no job is of, beyond the default ones: a typo (`trainig=2h`) would change nothing."""
    extra = set(intervals) - set(DEFAULT_INTERVALS)
    if extra and (unknown := sorted(extra - {job.workload for job in jobs})):
        kinds = sorted(set(DEFAULT_INTERVALS) | {job.workload for job in jobs if job.workload})
        raise ValueError(
            f"--checkpoint: no job is of the kind {', '.join(map(repr, unknown))} (the workload's kinds: "
            f"{', '.join(kinds)})"
        )
    return [
        job if (every := interval_of(job, intervals)) == job.checkpoint else replace(job, checkpoint=every)
        for job in jobs
    ]
