#!/usr/bin/env python3
"""The brief's table: the before, the whole-node before, the repository's policy and the recommended policy on
the mixed workload.

Run at a repository root:  python3 tools/dev/before_after.py --cluster prod-us --cluster prod-eu [--seeds
0,1,2] Each cluster and seed is one `gpupolicy simulate --workload mixed --busy-devices --format json` per
before (`--before brief` and `--before whole-node`) and one `gpupolicy recommend --workload mixed
--workload-seed SEED --busy-devices --format json` (the same workload, scale and replay; `--trials`, default
64; `--no-recommend` leaves it out), two at a time; the JSON reports land in --out. With `--weeks`, one more
`gpupolicy recommend` per cluster searches every seed's week at once (`--workload-seed` the first seed,
`--search-seeds` the others: decision 0102), and its one answer gets a row on each seed. Prints Markdown:
every replay's figures, then each run against the issue's targets (the recommended policy's rows too), then
what recommend changed. The figures are the reports' own; nothing is recomputed here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BEFORES = ("brief", "whole-node")
RECOMMEND = "recommend"
WEEKS = "recommend-weeks"  # one search over every seed's week, keyed by the cluster's first seed
REPLAYS = (
    ("before", "before", "brief"),
    ("before, whole node per job", "before", "whole-node"),
    ("repository policy", "proposed", "brief"),
)


def simulate(cluster: str, seed: int, before: str, out: Path) -> Path:
    report = out / f"{before}-{cluster}-{seed}.json"
    command = [
        sys.executable,
        "-m",
        "gpupolicy",
        "simulate",
        "--cluster",
        cluster,
        "--workload",
        "mixed",
        "--busy-devices",
        "--seed",
        str(seed),
        "--before",
        before,
        "--no-plots",
        "--format",
        "json",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: some job of the policy replay could never be scheduled
        raise SystemExit(f"{' '.join(command[2:])} failed ({done.returncode}):\n{done.stderr}")
    report.write_text(done.stdout)
    return report


def recommend(cluster: str, seed: int, trials: int, out: Path, others: list[int] | None = None) -> Path:
    """`gpupolicy recommend` on the workload `simulate --seed` replays, one worker (two run at a time); with
    `others`, searching their weeks too (`--search-seeds`)."""
    report = out / (f"recommend-{cluster}-{seed}.json" if others is None else f"{WEEKS}-{cluster}.json")
    command = [
        sys.executable,
        "-m",
        "gpupolicy",
        "recommend",
        "--cluster",
        cluster,
        "--workload",
        "mixed",
        "--workload-seed",
        str(seed),
        "--busy-devices",
        "--trials",
        str(trials),
        "--jobs",
        "1",
        "--format",
        "json",
        *(["--search-seeds", ",".join(map(str, others))] if others else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: no candidate checked was clean under every rule
        raise SystemExit(f"{' '.join(command[2:])} failed ({done.returncode}):\n{done.stderr}")
    report.write_text(done.stdout)
    return report


def hours(minutes: float) -> str:
    return f"{minutes / 60:.1f} h"


def serving_p95(figures: dict) -> float:
    return figures["wait_by_tier"].get("production", {"p95": 0})["p95"]


def replay_row(cluster: str, seed: int, scale: str, name: str, figures: dict, crash: str) -> str:
    idle = figures["idle_while_waiting_gpu_hours"]
    return (
        f"| {cluster} | {seed} | {scale} | {crash} | {name} | {figures['window_useful']:.1%} "
        f"| {figures['window_allocation']:.1%} | {figures['allocation_while_waiting']:.1%} "
        f"| {hours(figures['wait']['p95'])} | {serving_p95(figures):.0f} min | {figures['busy_starts']} "
        f"| {sum(figures['ready_timeouts'].values()):,} "
        f"| {idle.get('inference', 0):,.0f} / {idle.get('training', 0):,.0f} "
        f"| {figures['lost_to_preemption_gpu_hours']:.0f} |"
    )


def target_row(cluster: str, seed: int, report: dict, policy: dict | None = None) -> str:
    before, policy = report["before"], policy or report["proposed"]
    gain = (policy["window_useful"] - before["window_useful"]) * 100
    ratio = policy["wait"]["p95"] / before["wait"]["p95"] if before["wait"]["p95"] else float("inf")
    return (
        f"| {cluster} | {seed} | {gain:+.1f} | {ratio:.2f} | {serving_p95(policy):.0f} min "
        f"| {policy['busy_starts']} |"
    )


def recommended(report: dict) -> dict | None:
    """The recommended policy's figures in a recommend JSON report (None when nothing was clean)."""
    chosen = report.get("recommended")
    return chosen["summary"] if chosen else None


SAME = (
    "window_useful",
    "wait",
    "wait_by_tier",
    "idle_while_waiting_gpu_hours",
    "lost_to_preemption_gpu_hours",
)


def on_week(report: dict, seed: int, proposed: dict) -> dict | None:
    """The figures of a search over several weeks' answer on `seed`'s week: the report's own week, a searched
    week's (`other_seeds`), or, where the answer changes nothing (no week is listed), the repository's
    policy's as `simulate` replayed it."""
    if report.get("recommended") is None:
        return None
    if seed not in report["search_seeds"]:
        return recommended(report)
    week = next((week for week in report["other_seeds"] if week["seed"] == seed), None)
    return week["recommended"] if week else proposed


def changes(cluster: str, seed: int | str, report: dict, proposed: dict) -> str:
    """What recommend changed, and whether its replay of the repository's policy gave simulate's figures."""
    chosen = report.get("recommended")
    if chosen is None:
        return f"- {cluster} seed {seed}: no candidate checked was clean under every rule"
    same = all(report["repository"][name] == proposed[name] for name in SAME)
    what = "; ".join(report["changes"]) or "none: keep the repository's policy"
    return (
        f"- {cluster} seed {seed}: trial {chosen['trial']} of {len(report['candidates'])}, "
        f"{report['seconds']:.0f} s: {what}"
        + ("" if same else " (its replay of the repository's policy differs from simulate's)")
    )


def weekly_rows(reports, cluster: str, seeds: list[int], seed: int, scale: str) -> tuple[list, list]:
    """The rows of the search over every seed's week (`--weeks`) on `seed`'s week: (replay rows, target
    rows), none without that search."""
    found = reports.get((cluster, seeds[0], WEEKS))
    brief = reports[cluster, seed, "brief"]
    figures = found and on_week(found, seed, brief["proposed"])
    if not figures:
        return [], []
    name = f"recommended, weeks {','.join(map(str, seeds))} searched at once"
    return [replay_row(cluster, seed, scale, name, figures, "")], [
        target_row(f"{cluster} (recommended over the weeks)", seed, brief, figures)
    ]


def tables(reports: dict[tuple[str, int, str], dict], clusters: list[str], seeds: list[int]) -> str:
    lines = [
        "| cluster | seed | `--scale` | before: crash rate | replay | useful util (window) | GPU alloc "
        "(window) | alloc while work waits | wait p95 | serving p95 | busy-start failures "
        "| waitForPodsReady evictions | GPU-h idle while same-class work waits (inference / training) "
        "| GPU-h lost to preemption |",
        "|" + "---|" * 14,
    ]
    targets = [
        "| cluster | seed | useful util, policy - before (target >= +15 points) "
        "| wait p95, policy / before (target <= 0.33) | serving p95 (target <= 15 min) "
        "| busy-start failures (target 0) |",
        "|---|---|---|---|---|---|",
    ]
    for cluster in clusters:
        for seed in seeds:
            brief = reports[cluster, seed, "brief"]
            scale = brief["trace"].split("--scale ")[1].split(" ")[0]
            for name, side, before in REPLAYS:
                report = reports[cluster, seed, before]
                crash = (
                    ""
                    if side == "proposed"
                    else f"{report['before_start_failure_rate']:.1%}"
                    if before == "brief"
                    else "none"
                )
                lines.append(replay_row(cluster, seed, scale, name, report[side], crash))
            found = reports.get((cluster, seed, RECOMMEND))
            if found and recommended(found):
                lines.append(replay_row(cluster, seed, scale, "recommended", recommended(found), ""))
            targets.append(target_row(cluster, seed, brief))
            if found and recommended(found):
                targets.append(target_row(f"{cluster} (recommended)", seed, brief, recommended(found)))
            replays, weekly_targets = weekly_rows(reports, cluster, seeds, seed, scale)
            lines += replays
            targets += weekly_targets
    notes = [
        changes(cluster, seed, reports[cluster, seed, RECOMMEND], reports[cluster, seed, "brief"]["proposed"])
        for cluster in clusters
        for seed in seeds
        if (cluster, seed, RECOMMEND) in reports
    ]
    for cluster in clusters:
        if (found := reports.get((cluster, seeds[0], WEEKS))) is not None:
            weeks = f"{seeds[0]} with {','.join(map(str, seeds[1:]))} searched at once"
            notes.append(changes(cluster, weeks, found, reports[cluster, seeds[0], "brief"]["proposed"]))
    return "\n".join(lines + [""] + targets + ([""] + ["recommended changes:"] + notes if notes else []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", action="append", required=True, help="a cluster to replay (repeat)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated --seed values (default 0,1,2)")
    parser.add_argument("--out", type=Path, default=Path("artifacts/before-after"), help="where reports land")
    parser.add_argument("--jobs", type=int, default=2, help="replays at once (default 2)")
    parser.add_argument("--trials", type=int, default=64, help="recommend's candidates (default 64)")
    parser.add_argument("--no-recommend", action="store_true", help="leave the recommended column out")
    parser.add_argument(
        "--weeks", action="store_true", help="also one recommend per cluster over every seed's week at once"
    )
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    kinds = BEFORES if args.no_recommend else (*BEFORES, RECOMMEND)
    runs = [(cluster, seed, kind) for cluster in args.cluster for seed in seeds for kind in kinds]
    if args.weeks and len(seeds) > 1:
        runs += [(cluster, seeds[0], WEEKS) for cluster in args.cluster]

    def one(run):
        cluster, seed, kind = run
        if kind == WEEKS:
            return recommend(cluster, seed, args.trials, args.out, seeds[1:])
        return (
            recommend(cluster, seed, args.trials, args.out)
            if kind == RECOMMEND
            else simulate(cluster, seed, kind, args.out)
        )

    with ThreadPoolExecutor(args.jobs) as pool:
        paths = list(pool.map(one, runs))
    reports = {run: json.loads(path.read_text()) for run, path in zip(runs, paths, strict=True)}
    print(tables(reports, args.cluster, seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
