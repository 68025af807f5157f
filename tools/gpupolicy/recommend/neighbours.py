"""The local half of `recommend`'s search: candidates one move from the best policy found so far.

TPE samples every knob at once. Against a policy that is already tuned, such a point nearly always loses on
some headline figure, and the guard of decision 0094 refuses it. A change a platform team would make moves one
or two knobs. So every second trial is a hill-climbing step instead (`Climb`): one move from the incumbent,
which is the best candidate so far that improves on the repository's policy (`search.worth_checking`), else
the repository's policy itself. The moves are taken in rounds, each knob once per round (a MIG layout's
dozen choices would otherwise take a dozen trials from the other knobs), in an order drawn from the seed,
and none is replayed twice.

A move (`moves`) is one of these:
- an integer knob one step up or down. A step is an eighth of the knob's range, at least 1;
- a categorical knob (cohort, MIG layout) set to another of its choices;
- a grid knob (lending limit, MIG split) set to the grid value next to its own;
- a step of nominal quota handed from one searched queue to another on the same pool. Where the room they
  share is full, a step up alone would scale every queue's quota there back into the room (`space.resolved`),
  so it is not a move.

A move is kept as `space.resolved` makes it, so every candidate is valid by construction. A lending limit
above the new nominal quota comes down with it; a move that `space.resolved` would change in any other way is
left out. Why: docs/decisions/0101-recommend-climbs-beside-tpe.md.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

from .space import LEND, NOMINAL, Knob, params_key, resolved

STEPS = 8  # an integer knob's step is 1/STEPS of its range


def step(knob: Knob) -> int:
    return max(1, (knob.high - knob.low) // STEPS)


def moves(knob_list: list[Knob], params: Mapping[str, int | str]) -> dict[str, list[dict[str, int | str]]]:
    """Every candidate one move from `params` (see the module docstring), resolved, each once, grouped by what
    it moves: a knob's name, or `<pool>/<resource>/transfer` for the nominal quota handed between queues
    there. `params` itself is never among them."""
    start = resolved(knob_list, params)
    lending = {knob.name for knob in knob_list if knob.kind == LEND}
    seen: set[tuple] = set()
    found: dict[str, list[dict]] = {}
    for group, move in _raw_moves(knob_list, start):
        candidate = resolved(knob_list, move)
        rescaled = {name for name, value in move.items() if candidate[name] != value}
        if candidate != start and rescaled <= lending and params_key(candidate) not in seen:
            seen.add(params_key(candidate))
            found.setdefault(group, []).append(candidate)
    return found


def spread(groups: Mapping[str, list[dict]], rng: random.Random) -> list[dict]:
    """The moves in rounds, one of each group per round, groups and their moves in an order drawn from `rng`:
    the climb's first trials try every knob once before any knob twice."""
    shuffled = [list(groups[name]) for name in sorted(groups)]
    for members in shuffled:
        rng.shuffle(members)
    rng.shuffle(shuffled)
    rounds = max((len(members) for members in shuffled), default=0)
    return [members[i] for i in range(rounds) for members in shuffled if i < len(members)]


def _raw_moves(knob_list: list[Knob], start: dict) -> Iterator[tuple[str, dict]]:
    for knob in knob_list:
        for value in _values_beside(knob, start[knob.name]):
            yield knob.name, start | {knob.name: value}
    yield from _transfers(knob_list, start)


def _values_beside(knob: Knob, value: int | str) -> list[int | str]:
    if knob.grid:
        grid = sorted(knob.grid)
        at = grid.index(value) if value in grid else 0
        return [grid[i] for i in (at - 1, at + 1) if 0 <= i < len(grid) and grid[i] != value]
    if knob.choices:
        return [choice for choice in knob.choices if choice != value]
    value = int(value)
    return [v for v in (value - step(knob), value + step(knob)) if knob.low <= v <= knob.high]


def _transfers(knob_list: list[Knob], start: dict) -> Iterator[dict]:
    """A step of nominal quota from each searched queue to each other one on the same pool and resource."""
    groups: dict[tuple[str, str], list[Knob]] = {}
    for knob in knob_list:
        if knob.kind == NOMINAL:
            groups.setdefault((knob.pool, knob.resource), []).append(knob)
    for (pool, resource), group in groups.items():
        amount = step(group[0])
        for giver in group:
            for taker in group:
                if taker is not giver and int(start[giver.name]) >= amount:
                    handed = {
                        giver.name: int(start[giver.name]) - amount,
                        taker.name: min(taker.high, int(start[taker.name]) + amount),
                    }
                    yield f"{pool}/{resource}/transfer", start | handed


class Climb:
    """The local trials of one search: `next(count, incumbent)` gives up to `count` moves from `incumbent`
    not asked before, in rounds that move each knob once (`spread`), in an order drawn from the search's
    seed. `asked` is told every candidate the search asks, whichever half it came from, so no policy is
    replayed twice."""

    def __init__(self, knob_list: list[Knob], seed: int) -> None:
        self.knob_list = knob_list
        self.random = random.Random(seed)
        self.seen: set[tuple] = set()
        self.incumbent: tuple | None = None
        self.queue: list[dict] = []

    def asked(self, params: Mapping[str, int | str]) -> None:
        self.seen.add(params_key(resolved(self.knob_list, params)))

    def next(self, count: int, incumbent: Mapping[str, int | str]) -> list[dict]:
        incumbent = resolved(self.knob_list, incumbent)
        if params_key(incumbent) != self.incumbent:
            self.incumbent = params_key(incumbent)
            self.queue = spread(moves(self.knob_list, incumbent), self.random)
        taken = []
        while self.queue and len(taken) < count:
            candidate = self.queue.pop(0)
            if params_key(candidate) not in self.seen:
                self.seen.add(params_key(candidate))
                taken.append(candidate)
        return taken
