"""The verdict of a replay: each metric where the proposed policy does worse than the baseline by more than a
threshold, named with both figures, so a regression (training p99 7.4 h -> 10.4 h) cannot hide in a table.

Compared: jobs never scheduled (any increase), mean GPU allocation (lower is worse), makespan, and the wait
p50/p95/p99 overall and per tier present in both replays. Preemptions are left out: the baseline has none by
construction, so the proposed policy would always "lose" on them; the table shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .metrics import Summary, WaitStats
from .report import format_minutes

DEFAULT_WORSE_BY = 0.10  # a metric 10% worse than the baseline is named
MIN_WAIT_CHANGE_MINUTES = 5.0  # a wait that grows by less (1 min -> 2 min is +100%) is noise, not news
PERCENTILES = ("p50", "p95", "p99")
MAX_RELATIVE = 10.0  # beyond +1000% the base is near zero: the change is shown in absolute units


@dataclass(frozen=True)
class Worse:
    metric: str
    baseline: str
    proposed: str
    change: float  # relative change of the figure: +0.41 = 41% higher, -0.14 = 14% lower (allocation)
    absolute: str = ""  # the change in the figure's own unit, shown where a percentage says nothing

    def describe(self) -> str:
        if self.change == float("inf"):
            change = "from none"
        elif abs(self.change) > MAX_RELATIVE and self.absolute:
            change = self.absolute  # "+6,061,494%" from a near-zero base says less than "+889.5 h"
        else:
            change = f"{self.change:+.0%}"
        return f"{self.metric}: {self.baseline} -> {self.proposed} ({change})"


@dataclass(frozen=True)
class _Figure:
    metric: str
    baseline: float
    proposed: float
    higher_is_worse: bool
    shown: str  # format for one value: "minutes", "hours", "percent" or "count"
    floor: float = 0.0  # the smallest absolute change that counts


def worse_metrics(before: Summary, after: Summary, worse_by: float = DEFAULT_WORSE_BY) -> list[Worse]:
    """Every compared metric the proposed policy makes worse by more than `worse_by` (a fraction)."""
    found = []
    for figure in _figures(before, after):
        change = _relative_change(figure)
        if change > worse_by and abs(figure.proposed - figure.baseline) > figure.floor:
            delta = figure.proposed - figure.baseline
            absolute = ("+" if delta >= 0 else "-") + _show(abs(delta), figure.shown)
            found.append(
                Worse(
                    figure.metric,
                    _show(figure.baseline, figure.shown),
                    _show(figure.proposed, figure.shown),
                    change if figure.higher_is_worse else -change,
                    absolute,
                )
            )
    return found


def verdict_lines(worse: list[Worse], worse_by: float = DEFAULT_WORSE_BY) -> list[str]:
    if not worse:
        return [f"verdict: no metric is more than {worse_by:.0%} worse than the baseline"]
    return [
        f"verdict: {len(worse)} metric(s) more than {worse_by:.0%} worse than the baseline:",
        *(f"  - {item.describe()}" for item in worse),
    ]


def _figures(before: Summary, after: Summary) -> list[_Figure]:
    figures = [
        _Figure("jobs never scheduled", before.never_scheduled, after.never_scheduled, True, "count"),
        _Figure("GPU allocation", before.allocation, after.allocation, False, "percent"),
        _Figure("makespan", before.makespan_hours, after.makespan_hours, True, "hours"),
    ]
    figures += _wait_figures("", before.wait, after.wait)
    for tier in sorted(set(before.wait_by_tier) & set(after.wait_by_tier)):
        figures += _wait_figures(f" (tier {tier})", before.wait_by_tier[tier], after.wait_by_tier[tier])
    return figures


def _wait_figures(which: str, before: WaitStats, after: WaitStats) -> list[_Figure]:
    return [
        _Figure(
            f"wait {p}{which}",
            getattr(before, p),
            getattr(after, p),
            True,
            "minutes",
            MIN_WAIT_CHANGE_MINUTES,
        )
        for p in PERCENTILES
    ]


def _relative_change(figure: _Figure) -> float:
    """How much worse, as a fraction of the baseline; from a zero baseline any worsening is infinitely so."""
    worsening = (
        figure.proposed - figure.baseline if figure.higher_is_worse else figure.baseline - figure.proposed
    )
    if worsening <= 0:
        return 0.0
    return worsening / abs(figure.baseline) if figure.baseline else float("inf")


def _show(value: float, shown: str) -> str:
    if shown == "percent":
        return f"{value:.1%}"
    if shown == "hours":
        return f"{value:.1f} h"
    if shown == "minutes":
        return format_minutes(value)
    return f"{value:g}"
