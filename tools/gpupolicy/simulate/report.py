"""The Markdown report and PNG plots of a baseline-vs-proposed replay (matplotlib, Agg backend)."""

from __future__ import annotations

import io
from pathlib import Path

from .engine import Result
from .fairsharing import from_configuration as fair_sharing_from
from .jobs import MILLI
from .metrics import Summary, WaitStats
from .readiness import from_configuration as pods_ready_from
from .unmodelled import not_modelled

HOUR = 3600


def format_minutes(value: float) -> str:
    if value >= 120:
        return f"{value / 60:.1f} h"
    return f"{value:.1f} min"


def comparison_rows(before: Summary, after: Summary) -> list[tuple[str, str, str]]:
    return summary_rows([before, after])


def _share(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:.1%}"


def _per_key(figures: dict[str, float] | None, number: str = ",.1f") -> str:
    """`inference 12.0, training 3.5` (GPU-hours by pool class or kind of work; `number=","` for counts per
    queue: `research 4,114`), `0` when there are none, "not recorded" in a summary older than the figure."""
    if figures is None:
        return "not recorded"
    return ", ".join(f"{key} {value:{number}}" for key, value in figures.items()) or "0"


# (metric, how one summary shows it): the rows of every comparison table, in order
ROWS = (
    ("jobs replayed", lambda s: str(s.jobs)),
    ("jobs completed", lambda s: str(s.completed)),
    ("jobs never scheduled", lambda s: str(s.never_scheduled)),
    ("GPU allocation (mean over the replay)", lambda s: f"{s.allocation:.1%}"),
    (
        "GPU allocation over the arrival window",
        lambda s: "not recorded" if s.window_allocation is None else f"{s.window_allocation:.1%}",
    ),
    ("useful utilization (GPU-time of the work kept / capacity)", lambda s: f"{s.useful:.1%}"),
    ("useful utilization over the arrival window", lambda s: _share(s.window_useful)),
    ("GPU allocation while work waits", lambda s: _share(s.allocation_while_waiting)),
    ("GPU-hours idle while same-class work waits", lambda s: _per_key(s.idle_while_waiting_gpu_hours)),
    ("makespan", lambda s: f"{s.makespan_hours:.1f} h"),
    ("wait p50", lambda s: format_minutes(s.wait.p50)),
    ("wait p95", lambda s: format_minutes(s.wait.p95)),
    ("wait p99", lambda s: format_minutes(s.wait.p99)),
    ("preemptions", lambda s: str(s.preemptions)),
    ("GPU-hours lost to preemption", lambda s: f"{s.lost_to_preemption_gpu_hours:.1f}"),
    (
        "  of which per kind of work (since the last checkpoint)",
        lambda s: _per_key(s.checkpoint_loss_gpu_hours),
    ),
    ("GPU-hours of capacity lost to node failures", lambda s: f"{s.lost_to_failures_gpu_hours:.1f}"),
    ("jobs interrupted by node failures (requeued, work kept)", lambda s: str(s.interruptions)),
    (
        "admitted workloads evicted, pods not running in time (waitForPodsReady)",
        lambda s: _per_key(s.ready_timeouts, ","),
    ),
    ("starts failed on a busy device (time-sliced neighbour's memory)", lambda s: str(s.busy_starts)),
    ("jobs lost to busy devices (Job backoff limit)", lambda s: str(s.lost_to_busy_devices)),
)


def kueue_settings(cluster) -> dict:
    """What of the cluster's Kueue Configuration the replay of its declared policy applies (as
    policy.from_cluster reads it), and what the cluster turns on that it does not model (unmodelled.py)."""
    config = cluster.kueue_configuration
    ready, fair = pods_ready_from(config), fair_sharing_from(config)
    return {
        "wait_for_pods_ready": None
        if ready is None
        else {"timeout_seconds": ready.timeout, "block_admission": ready.block_admission},
        "fair_sharing": None if fair is None else {"preemption_strategies": list(fair.strategies)},
        "not_modelled": not_modelled(cluster),
    }


def kueue_line(settings: dict) -> str:
    ready, fair = settings["wait_for_pods_ready"], settings["fair_sharing"]
    pods = "off" if ready is None else f"timeout {ready['timeout_seconds'] / 60:g} min"
    if ready and ready["block_admission"]:
        pods += ", blockAdmission"
    sharing = "off" if fair is None else "on (" + ", then ".join(fair["preemption_strategies"]) + ")"
    line = f"- Kueue as the repository configures it: waitForPodsReady {pods}; fair sharing {sharing}"
    if settings["not_modelled"]:
        line += "; **not modelled, so the figures leave it out**: " + "; ".join(settings["not_modelled"])
    return line


def summary_rows(summaries: list[Summary]) -> list[tuple[str, ...]]:
    """One row per metric, one column per summary."""
    return [(label, *(show(s) for s in summaries)) for label, show in ROWS]


def markdown_table(header: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _wait_rows(stats: dict[str, WaitStats]) -> list[tuple]:
    return [
        (name, s.jobs, format_minutes(s.p50), format_minutes(s.p95), format_minutes(s.p99))
        for name, s in stats.items()
    ]


def render_markdown(
    title: str, context: list[str], before: Summary, after: Summary, plots: list[str], verdict: list[str]
) -> str:
    parts = [
        f"# {title}",
        "",
        *context,
        "",
        "## Verdict",
        "",
        *verdict,
        "",
        "## Baseline against the proposed policy",
        "",
        markdown_table(
            ("metric", f"baseline ({before.policy})", f"proposed ({after.policy})"),
            comparison_rows(before, after),
        ),
        "",
    ]
    for label, summary in (("proposed", after), ("baseline", before)):
        parts += [
            f"## Wait time per queue ({label})",
            "",
            markdown_table(("queue", "jobs", "p50", "p95", "p99"), _wait_rows(summary.wait_by_queue)),
            "",
            f"## Wait time per tier ({label})",
            "",
            markdown_table(("tier", "jobs", "p50", "p95", "p99"), _wait_rows(summary.wait_by_tier)),
            "",
        ]
    for label, summary in (("baseline", before), ("proposed", after)):
        if summary.never_reasons:
            parts += [
                f"## Jobs never scheduled ({label})",
                "",
                markdown_table(("reason", "jobs"), sorted(summary.never_reasons.items())),
                "",
            ]
    parts += [f"![{Path(p).stem}]({Path(p).name})" for p in plots]
    return "\n".join(parts) + "\n"


def _steps(result: Result, points: int = 2000) -> tuple[list[float], list[float], list[float]]:
    timeline = result.timeline
    stride = max(1, len(timeline) // points)
    sampled = timeline[::stride] + [timeline[-1]]
    start = result.runs[0].job.submit if result.runs else 0
    hours = [(t - start) / HOUR for t, _, _ in sampled] + [(result.end - start) / HOUR]
    alloc = [a / MILLI for _, a, _ in sampled] + [sampled[-1][1] / MILLI]
    avail = [v / MILLI for _, _, v in sampled] + [sampled[-1][2] / MILLI]
    return hours, alloc, avail


def plot_images(before: Result, after: Result, before_s: Summary, after_s: Summary) -> dict[str, bytes]:
    """The report's PNGs by file name; the caller writes them (through `transaction`, with the report)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images = {}
    for name, figure in (
        ("allocation.png", allocation_figure(before, after)),
        ("wait-by-tier.png", wait_figure(before_s, after_s)),
    ):
        buffer = io.BytesIO()
        figure.savefig(buffer, dpi=110, format="png")
        plt.close(figure)
        images[name] = buffer.getvalue()
    return images


def allocation_figure(before: Result, after: Result):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    for result, colour in ((before, "tab:gray"), (after, "tab:blue")):
        hours, alloc, avail = _steps(result)
        ax.step(hours, alloc, where="post", color=colour, label=f"{result.policy}: allocated GPUs")
    hours, _, avail = _steps(after)
    ax.step(hours, avail, where="post", color="black", linestyle=":", label="GPUs available")
    ax.set_xlabel("hours since the first submission")
    ax.set_ylabel("GPUs")
    ax.set_title("GPU allocation over time")
    legend_beside(fig, ax)
    return fig


def legend_beside(fig, ax) -> None:
    """The legend right of the axes, never over a curve (inside, "lower right" hid the busiest hours)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small")
    fig.tight_layout()


def wait_figure(before_s: Summary, after_s: Summary):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    names = sorted(set(before_s.wait_by_tier) | set(after_s.wait_by_tier))
    width = 0.38
    for offset, summary, colour in ((-width / 2, before_s, "tab:gray"), (width / 2, after_s, "tab:blue")):
        values = [summary.wait_by_tier[n].p95 if n in summary.wait_by_tier else 0 for n in names]
        ax.bar(
            [i + offset for i in range(len(names))],
            values,
            width,
            color=colour,
            label=f"{summary.policy} p95",
        )
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("wait p95 (minutes)")
    ax.set_title("Queue wait p95 per tier")
    legend_beside(fig, ax)
    return fig
