"""Fidelity check: the FGD paper's experiment on the Alibaba `openb` trace, run by the simulator's engine.

Protocol (Weng et al., "Beware of Fragmentation", USENIX ATC'23; ../shared/reference/traces-and-simulators.md
§2), as the published simulator runs it (hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/core.go and
simulator.go `tuneUpPods`, read for the procedure, no code copied): every pod of the list arrives once in a
seeded random order, then pods drawn at random are appended until the next one would push the GPU requests
past `tune` x the cluster's GPUs (1.3); no pod departs. Each arrival is filtered (CPU, memory, GPU model,
cards that fit) and scored; the result is the GPU allocation ratio against arrived demand.

This module is a driver: it turns the arrivals into jobs (one a second) and replays them through the same
Engine as `gpupolicy simulate`, with the engine's workload-protocol options (no departures, no queueing: a
pod that does not fit when it arrives is dropped) and a node-class pool (nodeclasses.py: the simulator's
scores and its node-rank tie-break) in place of the policy replays' pools. The curve is read off the
engine's allocation timeline.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .engine import Engine
from .jobs import Job
from .nodeclasses import MILLI, OWN_POLICY, POLICIES, Cluster, Memo, NodeType, Pod, typical_pods
from .placement import typical_sizes
from .policy import FlavorQuota, SimPolicy, SimPool, SimQueue

__all__ = [
    "MILLI",
    "OWN_POLICY",
    "POLICIES",
    "Cluster",
    "Memo",
    "NodeType",
    "Pod",
    "typical_pods",
    "arrivals",
    "run_experiment",
    "fidelity_table",
    "variant_table",
    "variant_markdown",
    "variants",
]
EXPECTED_POLICY = {"best-fit": "05-BestFit", "fgd": "06-FGD"}
POOL, QUEUE = "openb", "all"


def read_nodes(path: Path) -> list[NodeType]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [
            NodeType(row["model"].strip(), int(row["cpu_milli"]), int(row["memory_mib"]), int(row["gpu"]))
            for row in csv.DictReader(handle)
        ]


def read_pods(path: Path) -> list[Pod]:
    pods = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            num_gpu = int(row["num_gpu"])
            milli = int(row["gpu_milli"]) if num_gpu else 0
            spec = frozenset(s for s in (row.get("gpu_spec") or "").split("|") if s)
            pods.append(Pod(int(row["cpu_milli"]), int(row["memory_mib"]), num_gpu, milli, spec))
    return pods


def arrivals(pods: list[Pod], capacity: int, tune: float, rng: random.Random) -> Iterator[Pod]:
    """The published simulator's workload: every pod of the list once, shuffled, then pods drawn at random
    (with replacement) and appended until the next one would push the GPU requests past `tune` x capacity."""
    order = list(pods)
    rng.shuffle(order)
    target = tune * capacity
    demand = sum(p.gpu_demand for p in order)
    yield from order
    while True:
        pod = pods[rng.randrange(len(pods))]
        if demand + pod.gpu_demand > target:
            return
        demand += pod.gpu_demand
        yield pod


def run_experiment(
    nodes: list[NodeType],
    pods: list[Pod],
    policy: str,
    seed: int,
    tune: float = 1.3,
    typical: list[tuple[Pod, float]] | None = None,
    quantise: bool = True,
    memo: Memo | None = None,
) -> list[float]:
    """Allocation ratio (%) at arrived demand 0, 1, ... round(tune x 100) percent of the cluster's GPUs.

    `memo` may be shared between runs with the same typical pods (and quantisation); it only saves time."""
    rng = random.Random(seed)
    own = (
        [
            (count, milli, weight)
            for (count, milli), weight in typical_sizes((p.num_gpu, p.milli) for p in pods if p.num_gpu)
        ]
        if policy == OWN_POLICY
        else None
    )
    # the pool draws its node ranks from `rng` before the arrivals do, as the published simulator orders them
    pool = Cluster(
        nodes, typical if typical is not None else typical_pods(pods), rng, quantise, memo, own, policy
    )
    order = list(arrivals(pods, pool.capacity, tune, rng))
    jobs = [_job(pod, second) for second, pod in enumerate(order)]
    result = Engine(
        _policy(nodes, pool.capacity),
        jobs,
        [QUEUE] * len(jobs),
        pools={POOL: pool},
        departures=False,
        queueing=False,
    ).run()
    return _curve(order, result.timeline, pool.capacity, int(round(tune * 100)))


def _job(pod: Pod, second: int) -> Job:
    """One arrival as the engine's job: whole cards, or the milli of one card it asks for."""
    shared = pod.num_gpu == 1 and 0 < pod.milli < MILLI
    return Job(
        str(second),
        second,
        1,
        gpus=pod.num_gpu,
        share=pod.milli / MILLI if shared else 0.0,
        cpu=pod.cpu,
        memory_mib=pod.mem,
        gpu_models=pod.spec,
    )


def _policy(nodes: list[NodeType], capacity: int) -> SimPolicy:
    """One pool of the trace's nodes (its cards shared by the milli, as the simulator shares them) and one
    queue whose quota never limits: only placement decides."""
    pool = SimPool(POOL, len(nodes), max(node.cards for node in nodes), "milli")
    queue = SimQueue(QUEUE, (FlavorQuota(POOL, POOL, 2 * capacity),))
    return SimPolicy("fgd-protocol", {POOL: pool}, {QUEUE: queue})


def _curve(
    order: list[Pod], timeline: list[tuple[int, int, int]], capacity: int, columns: int
) -> list[float]:
    """Allocation (%) when the arrived demand first reaches each percent of capacity, read off the engine's
    timeline (arrival i happens at second i)."""
    curve = [0.0] * (columns + 1)
    arrived = reached = point = allocated = 0
    for second, pod in enumerate(order):
        while point < len(timeline) and timeline[point][0] <= second:
            allocated = timeline[point][1]
            point += 1
        arrived += pod.gpu_demand
        percent = min(columns, int(arrived * 100 // capacity))
        while reached <= percent:
            curve[reached] = 100.0 * allocated / capacity
            reached += 1
    while point < len(timeline):  # nothing after the last arrival changes it, but read to the end
        allocated = timeline[point][1]
        point += 1
    while reached <= columns:  # the last draw stopped short of the final column
        curve[reached] = 100.0 * allocated / capacity
        reached += 1
    return curve


def expected(results_csv: Path, workload: str, policy: str) -> dict[int, list[float]]:
    """seed -> the published allocation curve for one trace and policy (analysis_allo_discrete.csv)."""
    wanted = EXPECTED_POLICY[policy]
    curves = {}
    with results_csv.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["workload"] == workload and row["sc_policy"] == wanted:
                curves[int(row["seed"])] = [float(row[str(i)]) for i in range(131)]
    return curves


@dataclass
class FidelityRow:
    policy: str
    seeds: int
    ours_percent: float
    published_percent: float
    ours_unallocated: float
    published_unallocated: float

    @property
    def gap_points(self) -> float:
        return self.ours_percent - self.published_percent


def fidelity_table(
    traces: Path,
    results_csv: Path,
    trace: str = "default",
    seeds: Iterable[int] = range(42, 52),
    policies: Iterable[str] = POLICIES,
    column: int = 130,
) -> list[FidelityRow]:
    nodes = read_nodes(traces / "openb_node_list_gpu_node.csv")
    pods = read_pods(traces / f"openb_pod_list_{trace}.csv")
    typical = typical_pods(pods)
    total_gpus = sum(n.cards for n in nodes)
    rows = []
    seeds = list(seeds)
    for policy in policies:
        memo = Memo()
        ours = [
            run_experiment(nodes, pods, policy, seed, typical=typical, memo=memo)[column] for seed in seeds
        ]
        published_curves = (
            expected(results_csv, f"openb_pod_list_{trace}", policy) if policy in EXPECTED_POLICY else {}
        )
        published = [published_curves[s][column] for s in seeds if s in published_curves]
        mean_ours = sum(ours) / len(ours)
        # a variant the paper did not run
        mean_pub = sum(published) / len(published) if published else math.nan
        rows.append(
            FidelityRow(
                policy,
                len(seeds),
                mean_ours,
                mean_pub,
                (1 - mean_ours / 100) * total_gpus,
                (1 - mean_pub / 100) * total_gpus,
            )
        )
    return rows


def variants(traces: Path) -> list[str]:
    """Every `openb_pod_list_*` variant in the trace directory (default, cpu*, gpushare*, gpuspec*,
    multigpu*)."""
    prefix, suffix = "openb_pod_list_", ".csv"
    return sorted(p.name[len(prefix) : -len(suffix)] for p in traces.glob(f"{prefix}*{suffix}"))


def variant_table(
    traces: Path,
    results_csv: Path,
    seeds: Iterable[int] = (42,),
    policies: Iterable[str] = (*POLICIES, OWN_POLICY),
) -> dict[str, list[FidelityRow]]:
    """variant -> fidelity rows (published_percent is NaN where the published results do not cover it)."""
    seeds, policies = list(seeds), list(policies)
    return {trace: fidelity_table(traces, results_csv, trace, seeds, policies) for trace in variants(traces)}


def variant_markdown(table: dict[str, list[FidelityRow]]) -> str:
    """The FGD fidelity table: per variant, published vs ours for best-fit and FGD, and the project's own
    policy."""
    lines = [
        "| variant | best-fit published | best-fit ours | FGD published | FGD ours | "
        f"{OWN_POLICY} (ours) | {OWN_POLICY} - FGD |",
        "|---|---|---|---|---|---|---|",
    ]
    for trace, rows in table.items():
        by = {row.policy: row for row in rows}

        def shown(value: float) -> str:
            return "not published" if math.isnan(value) else f"{value:.2f}"

        own, fgd = by[OWN_POLICY].ours_percent, by["fgd"].ours_percent
        lines.append(
            f"| {trace} | {shown(by['best-fit'].published_percent)} | "
            f"{by['best-fit'].ours_percent:.2f} | {shown(by['fgd'].published_percent)} | {fgd:.2f} | "
            f"{own:.2f} | {own - fgd:+.2f} |"
        )
    return "\n".join(lines)
