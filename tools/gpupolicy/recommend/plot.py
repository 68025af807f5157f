"""The Pareto front of a search as a PNG: useful utilization against the worst target wait, every candidate
shown."""

from __future__ import annotations

import io
from collections.abc import Sequence

from ..simulate.report import legend_beside
from .search import Candidate, pareto_front


def pareto_png(candidates: Sequence[Candidate], best: Candidate | None) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [c for c in candidates if c.summary is not None]
    front = pareto_front(done)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.scatter(
        [c.worst_wait / 60 for c in done],
        [100 * c.summary.useful for c in done],
        s=14,
        color="tab:gray",
        label="candidates (whole replay)",
    )
    ax.plot(
        [c.worst_wait / 60 for c in front],
        [100 * c.summary.useful for c in front],
        "o-",
        color="tab:blue",
        label="Pareto front",
    )
    for c in done:
        if c.number == 0:
            ax.scatter(
                [c.worst_wait / 60],
                [100 * c.summary.useful],
                marker="s",
                s=60,
                color="black",
                label="repository policy",
            )
    if best is not None and best.summary is not None:
        ax.scatter(
            [best.worst_wait / 60],
            [100 * best.summary.useful],
            marker="*",
            s=160,
            color="tab:red",
            label="recommended",
        )
    ax.set_xlabel("worst target wait (hours)")
    ax.set_ylabel("useful utilization (%)")
    ax.set_title("Candidates: useful utilization vs worst wait")
    legend_beside(fig, ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=110, format="png")
    plt.close(fig)
    return buffer.getvalue()
