"""Estimated against actual: the replay's waits beside the waits a history observed, per queue.

A trace exported from Prometheus (`gpupolicy audit --prometheus`) carries each job's observed wait (submission
to start). The replay of the repository's policy predicts a wait for the same jobs; this module sets the two
side by side for each queue the replay sent them to: count, p50, p95 and max of each (nearest-rank
percentiles, as every other wait figure of the report). Only jobs with an observed wait are compared, so both
columns cover the same jobs; a job the replay never starts is counted apart, never as a wait of zero or of
the replay's end.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .engine import Result
from .metrics import percentile

ALL_QUEUES = "(all)"


@dataclass(frozen=True)
class Waits:
    """Count, p50, p95 and max of some waits, in minutes."""

    count: int
    p50: float
    p95: float
    max: float

    @classmethod
    def of(cls, seconds: list[float]) -> Waits:
        minutes = sorted(value / 60 for value in seconds)
        top = minutes[-1] if minutes else 0.0
        return cls(len(minutes), percentile(minutes, 50), percentile(minutes, 95), top)


@dataclass(frozen=True)
class QueueComparison:
    queue: str
    actual: Waits
    estimated: Waits  # of the compared jobs the replay started
    never_started: int  # compared jobs the replay never started


def compare_waits(result: Result, observed: dict[str, int]) -> list[QueueComparison]:
    """One row per queue (sorted), then one over every queue; [] when no replayed job has an observed wait."""
    actual: dict[str, list[float]] = {}
    estimated: dict[str, list[float]] = {}
    never: dict[str, int] = {}
    for run in result.runs:
        if run.job.id not in observed:
            continue
        actual.setdefault(run.queue, []).append(observed[run.job.id])
        estimated.setdefault(run.queue, [])
        never.setdefault(run.queue, 0)
        if run.first_start < 0:
            never[run.queue] += 1
        else:
            estimated[run.queue].append(run.first_start - run.job.submit)
    if not actual:
        return []
    rows = [
        QueueComparison(queue, Waits.of(actual[queue]), Waits.of(estimated[queue]), never[queue])
        for queue in sorted(actual)
    ]
    every = QueueComparison(
        ALL_QUEUES,
        Waits.of([w for values in actual.values() for w in values]),
        Waits.of([w for values in estimated.values() for w in values]),
        sum(never.values()),
    )
    return [*rows, every]


HEADER = (
    "queue",
    "jobs",
    "actual p50",
    "estimated p50",
    "actual p95",
    "estimated p95",
    "actual max",
    "estimated max",
    "never started in the replay",
)


def table_rows(rows: list[QueueComparison]) -> list[tuple]:
    from .report import format_minutes

    return [
        (
            row.queue,
            row.actual.count,
            format_minutes(row.actual.p50),
            format_minutes(row.estimated.p50),
            format_minutes(row.actual.p95),
            format_minutes(row.estimated.p95),
            format_minutes(row.actual.max),
            format_minutes(row.estimated.max),
            row.never_started,
        )
        for row in rows
    ]


def markdown_section(rows: list[QueueComparison], policy: str) -> str:
    """The report's section: the table, and what it compares."""
    from .report import markdown_table

    return "\n".join(
        [
            f"## Estimated vs actual waits per queue ({policy})",
            "",
            "Actual: the waits the trace's history observed (submission to start); estimated: the "
            "waits the replay of the repository's policy gives the same jobs.",
            "",
            markdown_table(HEADER, table_rows(rows)),
            "",
        ]
    )


def as_json(rows: list[QueueComparison]) -> list[dict]:
    return [
        {
            "queue": row.queue,
            "jobs": row.actual.count,
            "never_started": row.never_started,
            "actual_minutes": asdict(row.actual),
            "estimated_minutes": asdict(row.estimated),
        }
        for row in rows
    ]
