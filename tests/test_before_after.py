"""tools/dev/before_after.py's table, from hand-made reports (no replay): the rows of a recommend search over
several weeks (`--weeks`, decision 0102) take each seed's figures from the right place in its report."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools/dev/before_after.py"
spec = importlib.util.spec_from_file_location("before_after", SCRIPT)
before_after = importlib.util.module_from_spec(spec)
spec.loader.exec_module(before_after)


def _figures(useful: float, p95_minutes: float = 600.0) -> dict:
    return {
        "window_useful": useful,
        "window_allocation": 0.7,
        "allocation_while_waiting": 0.6,
        "wait": {"p95": p95_minutes},
        "wait_by_tier": {"production": {"p95": 1.0}},
        "busy_starts": 0,
        "ready_timeouts": {"research": 3},
        "idle_while_waiting_gpu_hours": {"inference": 10.0, "training": 5.0},
        "lost_to_preemption_gpu_hours": 2.0,
    }


def _simulated(seed: int) -> dict:
    """A `simulate --before brief` report of seed `seed`: the repository's policy at 0.5 + seed / 100."""
    return {
        "trace": f"mixed workload --scale 2:3 --seed {seed}",
        "before": _figures(0.4, 1200.0),
        "proposed": _figures(0.5 + seed / 100),
        "before_start_failure_rate": 0.2,
    }


def _searched(answer: dict | None, weeks: list[dict]) -> dict:
    """A `recommend --workload-seed 0 --search-seeds 1,2` report."""
    chosen = None if answer is None else {"trial": 5, "summary": answer}
    return {
        "search_seeds": [1, 2],
        "recommended": chosen,
        "other_seeds": weeks,
        "changes": ["a: 1 -> 2"] if weeks else [],
        "candidates": [{}] * 8,
        "seconds": 100.0,
        "repository": _simulated(0)["proposed"],
    }


def _reports(found: dict) -> dict:
    reports = {}
    for seed in (0, 1, 2):
        reports["prod-us", seed, "brief"] = _simulated(seed)
        reports["prod-us", seed, "whole-node"] = _simulated(seed)
    reports["prod-us", 0, before_after.WEEKS] = found
    return reports


def test_each_seed_reads_the_answer_on_its_own_week():
    own, second, third = _figures(0.61), _figures(0.62), _figures(0.63)
    found = _searched(own, [{"seed": 1, "recommended": second}, {"seed": 2, "recommended": third}])
    assert before_after.on_week(found, 0, _simulated(0)["proposed"]) is own
    assert before_after.on_week(found, 1, _simulated(1)["proposed"]) is second
    assert before_after.on_week(found, 2, _simulated(2)["proposed"]) is third
    table = before_after.tables(_reports(found), ["prod-us"], [0, 1, 2])
    rows = [line for line in table.splitlines() if "weeks 0,1,2 searched at once" in line]
    assert [row.split(" | ")[5] for row in rows] == ["61.0%", "62.0%", "63.0%"]
    targets = [line for line in table.splitlines() if "(recommended over the weeks)" in line]
    assert [row.split(" | ")[2] for row in targets] == ["+21.0", "+22.0", "+23.0"]  # against the before's 40%
    assert "- prod-us seed 0 with 1,2 searched at once: trial 5 of 8, 100 s: a: 1 -> 2" in table


def test_an_answer_that_keeps_the_repository_policy_reads_the_policy_on_every_week():
    kept = _simulated(0)["proposed"]
    found = _searched(kept, [])  # no week listed: the answer changes nothing
    for seed in (0, 1, 2):
        assert before_after.on_week(found, seed, _simulated(seed)["proposed"]) == _simulated(seed)["proposed"]
    assert before_after.on_week(_searched(None, []), 1, kept) is None  # nothing clean: no row
    table = before_after.tables(_reports(_searched(None, [])), ["prod-us"], [0, 1, 2])
    assert "searched at once |" not in table and "no candidate checked was clean" in table
