"""Wait targets such as `serving:p95<15m,training:p50<2h`, and how far a replay is from meeting them.

A target's key names ClusterQueues: by name, by `gpupolicy.io/tier` or by `gpupolicy.io/workload`. Every queue
it names must meet it on its own (a percentile over the queues together could hide one starved team).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ToolError
from ..simulate.metrics import Summary
from ..simulate.policy import SimPolicy

_TARGET = re.compile(r"^\s*([A-Za-z0-9][\w.-]*)\s*:\s*(p50|p95|p99)\s*<\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_MINUTES = {"s": 1 / 60, "m": 1, "": 1, "h": 60, "d": 1440}


@dataclass(frozen=True)
class Target:
    key: str
    percentile: str  # p50 | p95 | p99
    minutes: float

    def __str__(self) -> str:
        return f"{self.key}:{self.percentile}<{self.minutes:g}m"


def parse(text: str) -> list[Target]:
    targets = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _TARGET.match(item)
        if not match:
            raise ToolError(
                f"--target {item!r}: expected KEY:p50|p95|p99<DURATION, e.g. serving:p95<15m "
                "(KEY a ClusterQueue, tier or workload; duration in s, m, h or d)"
            )
        key, percentile, amount, unit = match.groups()
        targets.append(Target(key, percentile, float(amount) * _MINUTES[unit]))
    return targets


def queues_of(target: Target, policy: SimPolicy) -> list[str]:
    return sorted(q.name for q in policy.queues.values() if target.key in (q.name, q.tier, q.workload))


def check_known(targets: list[Target], policy: SimPolicy, cluster: str) -> None:
    for target in targets:
        if not queues_of(target, policy):
            raise ToolError(
                f"--target {target}: no ClusterQueue of cluster {cluster} is named, tiered or "
                f"has the workload {target.key!r}"
            )


def worst_waits(targets: list[Target], policy: SimPolicy, summary: Summary) -> dict[str, float]:
    """str(target) -> the worst of its queues' percentile, in minutes (0 for a queue that placed nothing)."""
    worst = {}
    for target in targets:
        waits = [
            getattr(summary.wait_by_queue[q], target.percentile)
            for q in queues_of(target, policy)
            if q in summary.wait_by_queue
        ]
        worst[str(target)] = max(waits, default=0.0)
    return worst


def shortfall(targets: list[Target], waits: dict[str, float]) -> float:
    """How far the waits are above their targets, summed as fractions of each target (0 when all are met)."""
    return sum(max(0.0, waits[str(t)] - t.minutes) / max(t.minutes, 1e-9) for t in targets)


def target_report(targets: list[Target], waits: dict[str, dict[str, float]]) -> list[dict]:
    """Per target, its bound and each policy's worst wait (`waits`: policy -> worst_waits), in minutes: what
    the
    command prints, the record keeps and the recommendation page shows."""
    return [
        {
            "target": str(t),
            "bound_minutes": t.minutes,
            "waits_minutes": {policy: found[str(t)] for policy, found in waits.items() if str(t) in found},
        }
        for t in targets
    ]


def target_rows(entries: list[dict], policies: list[str]) -> list[list[str]]:
    """Table rows of a target report: target, bound, then each policy's worst wait and whether it meets it."""
    rows = []
    for entry in entries:
        bound = float(entry["bound_minutes"])
        cells = []
        for policy in policies:
            wait = entry["waits_minutes"].get(policy)
            cells.append("" if wait is None else f"{wait:.0f}m ({'met' if wait <= bound else 'missed'})")
        rows.append([entry["target"], f"{bound:g}m", *cells])
    return rows
