"""Whether a recommendation holds on other weeks of the mixed workload (`recommend --other-seeds`).

A search answers the week it replayed. Another `--workload-seed` places the traces' windows elsewhere: another
week, with the same arrival rates. On the reference fleet, three of four seeds' answers made another seed's
wait p95 longer (docs/operations/recommend.md, "Does an answer hold on other weeks"). So the command can
replay each answer it checks, and the repository's policy, on other seeds' weeks, and offer an answer only
where it still holds on every one of them: no worse on any headline figure (objective.keeps_headlines, the
guard of decision 0094). Otherwise it walks on down the ranking, as for an answer the rules refuse.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..simulate.metrics import Summary
from . import objective
from .executors import Stopped

MOST = 10  # seeds one command replays besides its own


@dataclass(frozen=True)
class Week:
    seed: int
    jobs: int
    repository: Summary
    recommended: Summary | Stopped  # stopped: the engine stopped the answer's replay of this week

    @property
    def holds(self) -> bool:
        """No worse than the repository's policy on any headline figure of this week."""
        stopped = isinstance(self.recommended, Stopped)
        return not stopped and objective.keeps_headlines(self.recommended, self.repository)

    @property
    def improves(self) -> bool:
        """Holds, and strictly better on one headline figure."""
        return self.holds and objective.improves_headlines(self.recommended, self.repository)


def parse_seeds(text: str) -> tuple[int, ...] | None:
    """`1,2` -> (1, 2); None when a value is not a whole number of 0 or more, or there are more than MOST."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if len(parts) > MOST or not all(part.isascii() and part.isdigit() for part in parts):
        return None
    return tuple(dict.fromkeys(int(part) for part in parts))


def misses(weeks: list[Week]) -> str:
    """Why an answer is passed over: the weeks where it does not hold, with the headline figures it makes
    worse there."""
    where = []
    for week in weeks:
        if isinstance(week.recommended, Stopped):
            where.append(f"seed {week.seed} (its replay stopped: {week.recommended.reason})")
            continue
        mine, theirs = objective.headlines(week.recommended), objective.headlines(week.repository)
        worse = [name for name, a, b in zip(objective.HEADLINES, mine, theirs, strict=True) if a > b]
        if worse:
            where.append(f"seed {week.seed} ({', '.join(worse)} worse)")
    return "does not hold on " + ", ".join(where)


HEADERS = ("seed", "jobs", "useful (window)", "wait p95", "production p95", "busy starts", "holds")


def rows(weeks: list[Week]) -> list[tuple]:
    """The table's rows: each headline figure as the repository's policy -> the recommended."""

    def pair(figure, week: Week) -> str:
        return f"{figure(week.repository)} -> {figure(week.recommended)}"

    return [
        (
            week.seed,
            week.jobs,
            pair(lambda s: f"{100 * (s.window_useful or 0.0):.1f}%", week),
            pair(lambda s: f"{s.wait.p95 / 60:.1f} h", week),
            pair(lambda s: f"{objective.tier_p95s(s)[0]:.0f} min", week),
            pair(lambda s: s.busy_starts, week),
            ("yes, better" if week.improves else "yes") if week.holds else "no",
        )
        for week in weeks
    ]
