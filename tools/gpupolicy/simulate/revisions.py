"""Two revisions of the repository's policy replayed on one workload: `gpupolicy simulate --base REV`.

The base (a git revision, the trusted branch in CI) and the head (the working tree) are each a model Cluster
the command loaded; this module never reads the repository. Both replay the very same jobs (one list, built
once: the same trace, or the same mixed workload at the same `--scale` and `--seed`, `auto` resolved once on
the head), with the same failures and team mapping, and beside one baseline replayed once on the head's
hardware, so every difference between the two columns is the policy's (decision 0091). The figures are the
`Summary` of metrics.py; the verdict is verdict.py's, with the base in the baseline's place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from ..model import Cluster
from . import declared, logged_replay
from .beside import started
from .failures import Failure
from .jobs import Job
from .metrics import Summary, summarize
from .placement import DEFAULT_PLACEMENT
from .policy import baseline
from .report import format_minutes, markdown_table, summary_rows
from .verdict import DEFAULT_WORSE_BY, MAX_RELATIVE, Worse, worse_metrics

HEAD_LABEL = "working tree"


@dataclass(frozen=True)
class Revision:
    """One side of the comparison: the revision as the user named it, the commit it resolved to (None for the
    working tree), and the cluster's policy as that revision declares it."""

    name: str
    commit: str | None
    cluster: Cluster
    startup_checks: dict[str, bool] | None = None  # pool -> check on (`--busy-devices`), from that revision

    @property
    def label(self) -> str:
        return f"{self.name} ({self.commit[:12]})" if self.commit else self.name


@dataclass
class RevisionComparison:
    base: Revision
    head: Revision
    baseline: Summary  # replayed once, on the head's hardware
    base_summary: Summary
    head_summary: Summary
    before: Summary | None = None  # the brief's before (`--busy-devices`), replayed once by the command


def replay_revisions(
    base: Revision,
    head: Revision,
    jobs: Sequence[Job],
    failures: Sequence[Failure] = (),
    mapping: dict[str, str] | None = None,
    placement: str = DEFAULT_PLACEMENT,
    events: dict[str, list] | None = None,
) -> RevisionComparison:
    """The baseline once, then each revision's declared policy, all on `jobs`; `events` (when given) gets one
    log per replay, keyed baseline / base / head. The base replays in a forked child where the machine has a
    second core (beside.py) while this process replays the baseline, then the head: the same answer."""
    logged = events is not None
    base_replay = started(
        _summary, declared(base.cluster, placement, base.startup_checks), jobs, failures, mapping, logged
    )
    reference, baseline_log = _summary(baseline(head.cluster), jobs, failures, mapping, logged)
    head_summary, head_log = _summary(
        declared(head.cluster, placement, head.startup_checks), jobs, failures, mapping, logged
    )
    base_summary, base_log = base_replay()
    if events is not None:
        events.update({"baseline": baseline_log, "base": base_log, "head": head_log})
    return RevisionComparison(
        base,
        head,
        reference,
        replace(base_summary, policy=f"base {base.label}"),
        replace(head_summary, policy=f"head {head.label}"),
    )


def _summary(policy, jobs: Sequence[Job], failures: Sequence[Failure], mapping, logged: bool):
    """The replay's summary and its job events (`logged_replay`), summarized where it ran: only these go
    back through the pipe from a child."""
    result, log = logged_replay(policy, jobs, failures, mapping, logged)
    return summarize(result), log


@dataclass(frozen=True)
class Headline:
    """A figure compared between the revisions: its name, how to read it off a Summary (None when the summary
    has none), and its unit (percent, hours, minutes, count or gpu-hours)."""

    metric: str
    value: Callable[[Summary], float | None]
    unit: str


def _tier_p95(tier: str) -> Callable[[Summary], float | None]:
    return lambda s: s.wait_by_tier[tier].p95 if tier in s.wait_by_tier else None


BASE_HEADLINES = (
    Headline("jobs completed", lambda s: s.completed, "count"),
    Headline("jobs never scheduled", lambda s: s.never_scheduled, "count"),
    Headline("useful utilization over the arrival window", lambda s: s.window_useful, "percent"),
    Headline("GPU allocation over the arrival window", lambda s: s.window_allocation, "percent"),
    Headline("GPU allocation while work waits", lambda s: s.allocation_while_waiting, "percent"),
    Headline(
        "GPU-hours idle while same-class work waits",
        lambda s: sum(s.idle_while_waiting_gpu_hours.values()),
        "gpu-hours",
    ),
    Headline("makespan", lambda s: s.makespan_hours, "hours"),
    Headline("wait p50", lambda s: s.wait.p50, "minutes"),
    Headline("wait p95", lambda s: s.wait.p95, "minutes"),
    Headline("wait p99", lambda s: s.wait.p99, "minutes"),
    Headline("preemptions", lambda s: s.preemptions, "count"),
    Headline("GPU-hours lost to preemption", lambda s: s.lost_to_preemption_gpu_hours, "gpu-hours"),
    Headline("starts failed on a busy device", lambda s: s.busy_starts, "count"),
)


def headlines(comparison: RevisionComparison) -> list[Headline]:
    """The fixed figures, then the wait p95 of every tier either revision replays (tier production is the
    serving p95)."""
    tiers = sorted(set(comparison.base_summary.wait_by_tier) | set(comparison.head_summary.wait_by_tier))
    per_tier = (Headline(f"wait p95 (tier {tier})", _tier_p95(tier), "minutes") for tier in tiers)
    return [*BASE_HEADLINES, *per_tier]


def show(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "percent":
        return f"{value:.1%}"
    if unit == "hours":
        return f"{value:.1f} h"
    if unit == "minutes":
        return format_minutes(value)
    if unit == "gpu-hours":
        return f"{value:,.1f}"
    return f"{value:g}"


def delta(base: float | None, head: float | None, unit: str) -> str:
    """head - base in the figure's unit (percentage points for a share), with the relative change where the
    base is not near zero: `-1.2 h (-23%)`, `+3.1 pts`, `0`."""
    if base is None or head is None:
        return "n/a"
    change = head - base
    if change == 0:
        return "0"
    sign = "+" if change > 0 else "-"
    if unit == "percent":
        return f"{sign}{abs(change) * 100:.1f} pts"
    text = sign + show(abs(change), unit)
    relative = change / abs(base) if base else None
    if relative is not None and abs(relative) <= MAX_RELATIVE:
        text += f" ({relative:+.0%})"
    return text


def _references(comparison: RevisionComparison) -> list[Summary]:
    return [comparison.baseline, *([comparison.before] if comparison.before is not None else [])]


def headline_rows(comparison: RevisionComparison) -> list[tuple[str, ...]]:
    """(metric, baseline, [before,] base, head, head - base) per headline figure."""
    rows = []
    for figure in headlines(comparison):
        base, head = figure.value(comparison.base_summary), figure.value(comparison.head_summary)
        references = (show(figure.value(s), figure.unit) for s in _references(comparison))
        rows.append(
            (
                figure.metric,
                *references,
                show(base, figure.unit),
                show(head, figure.unit),
                delta(base, head, figure.unit),
            )
        )
    return rows


def headline_header(comparison: RevisionComparison) -> tuple[str, ...]:
    before = ("before",) if comparison.before is not None else ()
    return (
        "metric",
        "baseline",
        *before,
        f"base {comparison.base.label}",
        f"head ({comparison.head.label})",
        "head - base",
    )


def headline_table(comparison: RevisionComparison) -> str:
    return markdown_table(headline_header(comparison), headline_rows(comparison))


def render_markdown(comparison: RevisionComparison, context: list[str], verdict: list[str]) -> str:
    """report.md: the context lines, the verdict, the headline figures with deltas, then every figure of
    report.py's table for the baseline, [the before,] the base and the head."""
    summaries = [*_references(comparison), comparison.base_summary, comparison.head_summary]
    parts = [
        "# Simulation report: two revisions",
        "",
        *context,
        "",
        "## Verdict",
        "",
        *verdict,
        "",
        "## Headline figures",
        "",
        headline_table(comparison),
        "",
        "## Every figure",
        "",
        markdown_table(headline_header(comparison)[:-1], summary_rows(summaries)),
    ]
    return "\n".join(parts) + "\n"


def head_worse(comparison: RevisionComparison, worse_by: float = DEFAULT_WORSE_BY) -> list[Worse]:
    """The metrics the head makes worse than the base by more than `worse_by`: verdict.py's comparison with
    the base in the baseline's place."""
    return worse_metrics(comparison.base_summary, comparison.head_summary, worse_by)


def verdict_lines(worse: list[Worse], worse_by: float = DEFAULT_WORSE_BY) -> list[str]:
    if not worse:
        return [f"verdict: no metric of the head is more than {worse_by:.0%} worse than the base"]
    return [
        f"verdict: {len(worse)} metric(s) of the head more than {worse_by:.0%} worse than the base:",
        *(f"  - {item.describe()}" for item in worse),
    ]


def as_json(comparison: RevisionComparison, worse: list[Worse], worse_by: float) -> dict:
    """Both revisions' figures, the shared baseline, the headline deltas and the head-against-base verdict."""
    figures = headlines(comparison)
    return {
        "base": {
            "revision": comparison.base.name,
            "commit": comparison.base.commit,
            "summary": asdict(comparison.base_summary),
        },
        "head": {
            "revision": comparison.head.name,
            "commit": comparison.head.commit,
            "summary": asdict(comparison.head_summary),
        },
        "baseline": asdict(comparison.baseline),
        **({"before": asdict(comparison.before)} if comparison.before is not None else {}),
        "headline": [
            {
                "metric": f.metric,
                "unit": f.unit,
                "baseline": f.value(comparison.baseline),
                "base": f.value(comparison.base_summary),
                "head": f.value(comparison.head_summary),
            }
            for f in figures
        ],
        "verdict": {"worse_by": worse_by, "against": "base", "worse": [asdict(item) for item in worse]},
    }
