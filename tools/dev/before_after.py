#!/usr/bin/env python3
"""The brief's table: the before, the whole-node before and the repository's policy on the mixed workload.

Run at a repository root:  python3 tools/dev/before_after.py --cluster prod-us --cluster prod-eu [--seeds 0,1,2]
Each cluster and seed is one `gpupolicy simulate --workload mixed --busy-devices --format json` per before
(`--before brief` and `--before whole-node`), two at a time; the JSON reports land in --out. Prints Markdown:
every replay's figures, then each run against the issue's targets. The figures are the reports' own; nothing is
recomputed here.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BEFORES = ("brief", "whole-node")
REPLAYS = (("before", "before", "brief"), ("before, whole node per job", "before", "whole-node"),
           ("repository policy", "proposed", "brief"))


def simulate(cluster: str, seed: int, before: str, out: Path) -> Path:
    report = out / f"{before}-{cluster}-{seed}.json"
    command = [sys.executable, "-m", "gpupolicy", "simulate", "--cluster", cluster, "--workload", "mixed",
               "--busy-devices", "--seed", str(seed), "--before", before, "--no-plots", "--format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: some job of the policy replay could never be scheduled
        raise SystemExit(f"{' '.join(command[2:])} failed ({done.returncode}):\n{done.stderr}")
    report.write_text(done.stdout)
    return report


def hours(minutes: float) -> str:
    return f"{minutes / 60:.1f} h"


def serving_p95(figures: dict) -> float:
    return figures["wait_by_tier"].get("production", {"p95": 0})["p95"]


def replay_row(cluster: str, seed: int, scale: str, name: str, figures: dict, crash: str) -> str:
    idle = figures["idle_while_waiting_gpu_hours"]
    return (f"| {cluster} | {seed} | {scale} | {crash} | {name} | {figures['window_useful']:.1%} "
            f"| {figures['window_allocation']:.1%} | {figures['allocation_while_waiting']:.1%} "
            f"| {hours(figures['wait']['p95'])} | {serving_p95(figures):.0f} min | {figures['busy_starts']} "
            f"| {idle.get('inference', 0):,.0f} / {idle.get('training', 0):,.0f} "
            f"| {figures['lost_to_preemption_gpu_hours']:.0f} |")


def target_row(cluster: str, seed: int, report: dict) -> str:
    before, policy = report["before"], report["proposed"]
    gain = (policy["window_useful"] - before["window_useful"]) * 100
    ratio = policy["wait"]["p95"] / before["wait"]["p95"] if before["wait"]["p95"] else float("inf")
    return (f"| {cluster} | {seed} | {gain:+.1f} | {ratio:.2f} | {serving_p95(policy):.0f} min "
            f"| {policy['busy_starts']} |")


def tables(reports: dict[tuple[str, int, str], dict], clusters: list[str], seeds: list[int]) -> str:
    lines = ["| cluster | seed | `--scale` | before: crash rate | replay | useful util (window) | GPU alloc (window) "
             "| alloc while work waits | wait p95 | serving p95 | busy-start failures "
             "| GPU-h idle while same-class work waits (inference / training) | GPU-h lost to preemption |",
             "|" + "---|" * 13]
    targets = ["| cluster | seed | useful util, policy - before (target >= +15 points) "
               "| wait p95, policy / before (target <= 0.33) | serving p95 (target <= 15 min) "
               "| busy-start failures (target 0) |", "|---|---|---|---|---|---|"]
    for cluster in clusters:
        for seed in seeds:
            brief = reports[cluster, seed, "brief"]
            scale = brief["trace"].split("--scale ")[1].split(" ")[0]
            for name, side, before in REPLAYS:
                report = reports[cluster, seed, before]
                crash = ("" if side == "proposed" else
                         f"{report['before_start_failure_rate']:.1%}" if before == "brief" else "none")
                lines.append(replay_row(cluster, seed, scale, name, report[side], crash))
            targets.append(target_row(cluster, seed, brief))
    return "\n".join(lines + [""] + targets)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", action="append", required=True, help="a cluster to replay (repeat)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated --seed values (default 0,1,2)")
    parser.add_argument("--out", type=Path, default=Path("artifacts/before-after"), help="where reports land")
    parser.add_argument("--jobs", type=int, default=2, help="replays at once (default 2)")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    runs = [(cluster, seed, before) for cluster in args.cluster for seed in seeds for before in BEFORES]
    with ThreadPoolExecutor(args.jobs) as pool:
        paths = list(pool.map(lambda run: simulate(*run, args.out), runs))
    reports = {run: json.loads(path.read_text()) for run, path in zip(runs, paths, strict=True)}
    print(tables(reports, args.cluster, seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
