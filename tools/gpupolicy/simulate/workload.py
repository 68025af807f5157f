"""The mixed ITP + openb workload as a trace, from the command line's `--workload mixed --scale --days`
(shared by `simulate` and `recommend`, which replay the same workload)."""

from __future__ import annotations

from pathlib import Path

from . import mixed
from .traces import Trace


def parse_scales(text: str) -> tuple[float, float] | None | str:
    """`auto`, or (training, inference) arrival-rate factors from `T:I`; None when malformed."""
    if text == "auto":
        return "auto"
    training, sep, inference = text.partition(":")
    try:
        factors = (float(training), float(inference)) if sep else None
    except ValueError:
        return None
    return factors if factors and all(0 < f <= 1000 for f in factors) else None


def mixed_trace(
    cluster, traces: Path, scale: str, days: float, seed: int = 0, sources: tuple | None = None
) -> Trace:
    """The mixed workload as a Trace (a TraceError when its sources are missing or the factors are wrong):
    teams from the cluster's queue labels, `auto` scaled to a sustained load, windows placed by `seed`.
    `sources`: the (ITP, openb) jobs `mixed.read_sources` read from `traces` already (several weeks of one
    workload read them once)."""
    itp, openb = sources if sources is not None else mixed.read_sources(traces)
    scales = parse_scales(scale)
    if scales == "auto":
        workload = mixed.sustained_scales(cluster, itp, openb, days, seed)
    else:
        workload = mixed.build(
            itp, openb, *scales, days, teams=mixed.teams_of(cluster), cluster=cluster, seed=seed
        )
    return Trace(
        workload.jobs, workload.describe(), "mixed", scale=(workload.training_scale, workload.inference_scale)
    )
