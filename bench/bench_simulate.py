"""Replay speed of `gpupolicy simulate` in events per second; run as `python bench/bench_simulate.py`.

Replays (each skipped when its input is absent):
- openb default pod list (Alibaba GPU trace v2023) on its own timestamps, on the reference cluster prod-eu,
  baseline and proposed policy (target: under 2 s);
- the Microsoft ITP trace (69,351 jobs, 10 source clusters as 10 team queues in one cohort) on a 1,280-GPU
  pool whose nominal quotas follow each source cluster's share of GPU-hours (target: under 20 s);
- the mixed congested workload (`gpupolicy simulate --workload mixed`) on prod-us and prod-eu, baseline,
  proposed and proposed without the startup check (target: 50k events/s or more);
- the FGD fidelity experiment for one seed per policy (best-fit and FGD);
- with `--recommend` (alone): `gpupolicy recommend`'s search, 64 candidates on prod-us and the mixed workload,
  in the local process pool (2 workers) and on a local Ray instance with 2 workers, back to back: candidates
  per second, Ray's speed-up against the pool, and a check that both found the same candidates and numbers.
The peer figure printed alongside is the naive pure-Python replay measured in
../shared/reference/traces-and-simulators.md §5 (about 1.5k events/s on the same kind of machine).
The figures go to bench/results-simulate.json (replay -> seconds, events, events per second) as well.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / ".." / "shared" / "traces"
sys.path.insert(0, str(REPO / "tools"))

from gpupolicy.simulate import Engine, replay  # noqa: E402
from gpupolicy.simulate.metrics import summarize  # noqa: E402
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue, assign_queues  # noqa: E402
from gpupolicy.simulate.report import comparison_rows, markdown_table  # noqa: E402
from gpupolicy.simulate.traces import read_trace  # noqa: E402

NAIVE_EVENTS_PER_SECOND = 1500
RESULTS = REPO / "bench" / "results-simulate.json"
FIGURES: dict[str, dict] = {}  # label -> figures, written to RESULTS at the end


def itp_policy(jobs, gpus: int = 1280, placement: str = "best-fit") -> SimPolicy:
    hours = Counter()
    for job in jobs:
        hours[job.team] += job.gpus * job.duration
    total = sum(hours.values())
    pool = SimPool("itp", gpus // 8, 8, "exclusive")
    queues = {
        team: SimQueue(
            team,
            (FlavorQuota("itp", "itp", max(8, round(gpus * share / total) // 8 * 8) * 1000),),
            cohort="itp",
            team=team,
            tier="training",
            workload="training",
            within_queue="LowerPriority",
            reclaim="Any",
        )
        for team, share in sorted(hours.items())
    }
    return SimPolicy("proposed", {"itp": pool}, queues, placement=placement)


def itp_baseline(gpus: int = 1280) -> SimPolicy:
    pool = SimPool("itp", gpus // 8, 8, "exclusive")
    queue = SimQueue("fifo", (FlavorQuota("itp-whole", "itp", gpus * 1000),), strategy="StrictFIFO")
    return SimPolicy("baseline", {"itp": pool}, {"fifo": queue}, whole_gpus=True)


def timed(label: str, policy: SimPolicy, jobs) -> tuple[float, object]:
    started = time.perf_counter()
    result = Engine(policy, jobs, assign_queues(jobs, policy)).run()
    seconds = time.perf_counter() - started
    rate = result.events / seconds if seconds else 0
    FIGURES[label] = {
        "jobs": len(jobs),
        "events": result.events,
        "seconds": round(seconds, 3),
        "events_per_second": round(rate),
    }
    print(
        f"{label:48} {len(jobs):>7} jobs {result.events:>8} events {seconds:7.2f} s "
        f"{rate:>10,.0f} events/s ({rate / NAIVE_EVENTS_PER_SECOND:.0f}x the naive replay)"
    )
    return seconds, result


def bench_openb() -> None:
    path = TRACES / "alibaba-clusterdata-gpu-v2023" / "openb_pod_list_default.csv"
    if not path.is_file() or not (REPO / "clusters" / "prod-eu").is_dir():
        print("openb: skipped (trace or reference fleet absent)")
        return
    from gpupolicy.pipeline import load_fleet
    from gpupolicy.simulate.policy import baseline, from_cluster

    cluster = load_fleet(REPO, ["prod-eu"]).clusters["prod-eu"]
    jobs = read_trace(path).jobs
    total = 0.0
    for policy in (baseline(cluster), from_cluster(cluster)):
        seconds, _ = timed(f"openb default on prod-eu ({policy.name})", policy, jobs)
        total += seconds
    print(f"openb default, both policies: {total:.2f} s (target < 2 s)")


def bench_itp() -> None:
    path = TRACES / "microsoft-elasticflow-itp" / "raw-traces.tar.gz"
    if not path.is_file():
        print("itp: skipped (trace absent)")
        return
    jobs = read_trace(path).jobs
    before_s, before = timed("ITP on 1,280 GPUs (baseline: one strict FIFO)", itp_baseline(), jobs)
    after_s, after = timed("ITP on 1,280 GPUs (10 team queues, one cohort)", itp_policy(jobs), jobs)
    print(f"ITP, each policy: {before_s:.2f} s / {after_s:.2f} s (target < 20 s each)\n")
    print(
        markdown_table(
            ("metric", "baseline", "proposed"), comparison_rows(summarize(before), summarize(after))
        )
    )


def bench_mixed() -> None:
    from gpupolicy.simulate import mixed

    itp, openb = mixed.trace_paths(TRACES)
    if not (itp.is_file() and openb.is_file() and (REPO / "clusters" / "prod-us").is_dir()):
        print("mixed: skipped (traces or reference fleet absent)")
        return
    from gpupolicy.pipeline import load_fleet
    from gpupolicy.simulate.busy import startup_checks, with_busy_devices
    from gpupolicy.simulate.fairsharing import FairSharing
    from gpupolicy.simulate.policy import baseline, from_cluster

    sources = mixed.read_sources(TRACES)
    fleet = load_fleet(REPO, ["prod-us", "prod-eu"])
    events = seconds = 0.0
    for name, cluster in sorted(fleet.clusters.items()):
        workload = mixed.sustained_scales(cluster, *sources)
        proposed = from_cluster(cluster)
        for label, policy in (
            ("baseline", baseline(cluster)),
            ("proposed", with_busy_devices(proposed, startup_checks(REPO, cluster))),
            ("no check", with_busy_devices(proposed, startup_checks(REPO, cluster, False))),
        ):
            took, result = timed(f"mixed on {name} ({label})", policy, workload.jobs)
            events += result.events
            seconds += took
            if label == "proposed":  # fair sharing on (decision 0099), against the same replay without it
                fair, _ = timed(
                    f"mixed on {name} (proposed, fair sharing)",
                    replace(policy, fair_sharing=FairSharing()),
                    workload.jobs,
                )
                print(f"{'':48} fair sharing: {fair / took:.2f}x the classical replay's time")
    rate = events / seconds if seconds else 0
    FIGURES["mixed, all replays"] = {
        "events": int(events),
        "seconds": round(seconds, 3),
        "events_per_second": round(rate),
    }
    print(f"mixed workload, all replays: {rate:,.0f} events/s (target >= 50,000)")


def bench_fidelity() -> None:
    traces = TRACES / "alibaba-clusterdata-gpu-v2023"
    if not (traces / "openb_node_list_gpu_node.csv").is_file():
        print("fgd: skipped (trace absent)")
        return
    from gpupolicy.simulate import fidelity

    nodes = fidelity.read_nodes(traces / "openb_node_list_gpu_node.csv")
    pods = fidelity.read_pods(traces / "openb_pod_list_default.csv")
    for policy in fidelity.POLICIES:
        started = time.perf_counter()
        curve = fidelity.run_experiment(nodes, pods, policy, 42)
        seconds = time.perf_counter() - started
        FIGURES[f"FGD experiment, {policy}, seed 42"] = {
            "seconds": round(seconds, 3),
            "allocation_percent": round(curve[130], 2),
        }
        print(
            f"FGD experiment, {policy:8} seed 42: {seconds:6.2f} s, allocation at 130% demand "
            f"{curve[130]:.2f}%"
        )


def fidelity_variants() -> None:
    """The FGD table over every openb variant (seeds 42-44), for docs/operations/simulation.md."""
    traces = TRACES / "alibaba-clusterdata-gpu-v2023"
    results = TRACES / "fgd-simulator-expected-results" / "analysis_allo_discrete.csv"
    if not results.is_file():
        print("fgd variants: skipped (trace absent)")
        return
    from gpupolicy.simulate import fidelity

    print(fidelity.variant_markdown(fidelity.variant_table(traces, results, seeds=range(42, 45))))


def bench_recommend(trials: int = 64, workers: int = 2) -> None:
    from gpupolicy.simulate import mixed

    itp, openb = mixed.trace_paths(TRACES)
    if not (itp.is_file() and openb.is_file() and (REPO / "clusters" / "prod-us").is_dir()):
        print("recommend: skipped (traces or reference fleet absent)")
        return
    from gpupolicy.pipeline import load_fleet
    from gpupolicy.recommend import executors, space, targets
    from gpupolicy.recommend.search import search

    fleet = load_fleet(REPO)  # every cluster: the examples say which MIG profiles a layout must keep
    cluster = fleet.clusters["prod-us"]
    jobs = sorted(
        mixed.sustained_scales(cluster, *mixed.read_sources(TRACES)).jobs, key=lambda j: (j.submit, j.id)
    )
    knob_list = space.knobs(cluster, fleet)  # as the command searches
    wanted = targets.parse("serving:p95<15m,training:p50<2h")
    found = {}
    for label, make in (
        ("process pool", lambda: executors.ProcessPool(jobs, workers)),
        ("Ray", lambda: _ray(jobs)),
    ):
        started = time.perf_counter()
        runner = make()
        ready = time.perf_counter()
        try:
            candidates = search(cluster, knob_list, wanted, trials, 0, 8, runner)
        finally:
            runner.close()
        took = time.perf_counter() - ready
        found[label] = [(c.number, c.pruned, c.summary and c.summary.useful) for c in candidates]
        FIGURES[f"recommend on prod-us, mixed, {trials} candidates ({label}, {workers} workers)"] = {
            "candidates": trials,
            "seconds": round(took, 3),
            "startup_seconds": round(ready - started, 3),
            "candidates_per_second": round(trials / took, 2),
            "replayed_whole": sum(1 for c in candidates if c.summary),
        }
        print(
            f"recommend, {trials} candidates on prod-us ({label:12}): {took:6.2f} s, {trials / took:5.2f} "
            f"candidates/s (+{ready - started:.1f} s to start)"
        )
    pool, ray = (
        FIGURES[f"recommend on prod-us, mixed, {trials} candidates ({k}, {workers} workers)"]["seconds"]
        for k in ("process pool", "Ray")
    )
    FIGURES["recommend: Ray speed-up against the process pool"] = {
        "speed_up": round(pool / ray, 2),
        "identical_results": found["Ray"] == found["process pool"],
    }
    print(
        f"Ray against the process pool: {pool / ray:.2f}x; identical results: "
        f"{found['Ray'] == found['process pool']}"
    )


def _ray(jobs):
    import ray

    from gpupolicy.recommend import executors

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    runner = executors.RayCluster(jobs, "local")
    runner.started = True  # this bench started Ray: close() shuts it down
    return runner


if __name__ == "__main__":
    if "--recommend" in sys.argv:  # merged into the figures of the last full run
        FIGURES.update(json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {})
        bench_recommend()
        RESULTS.write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        sys.exit(0)
    if "--fidelity-variants" in sys.argv:  # about 10 minutes; prints the table alone
        fidelity_variants()
        sys.exit(0)
    bench_openb()
    bench_itp()
    bench_mixed()
    if "--fidelity" in sys.argv:
        bench_fidelity()
    RESULTS.write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"\nfigures: {RESULTS.relative_to(REPO)}")
    _ = replay  # public entry point kept importable for `make bench` users
