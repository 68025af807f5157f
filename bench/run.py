"""`make bench`: validate a generated fleet and compare against a peer and a floor, measured in the same run.

Measures, on a synthetic fleet written by bench/generate_fleet.py:
- end-to-end `validate` (pipeline.run with a cold render cache), per stage, plus the report;
- the peer: `kubernetes_validate.validate(obj, "1.33.0", strict=True)` on a sample of the same rendered core
  objects (it cannot validate custom resources), against our compiled validators on the same sample;
- the floor: `kubectl kustomize` (our render stage) plus parsing its output with PyYAML's C loader;
- incremental validation after a one-pool change (--changed-since HEAD, and --cluster of the affected cluster);
- `gpupolicy docs` generation; peak memory (ru_maxrss) after the end-to-end run.
Writes bench/results.json (see docs/operations/performance.md for how to read it).

    python bench/run.py            # 25 clusters, ~13,000 objects, peer on 5,000 objects (about 5 minutes)
    python bench/run.py --quick    # 6 clusters, peer on 1,000 objects (about a minute)
    python bench/run.py --full     # 100 clusters x 1,000 pools, ~52,000 objects (about 15-20 minutes)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate_fleet  # noqa: E402

from gpupolicy import cli, incremental, kustomize, pipeline, report  # noqa: E402
from gpupolicy.cachestore import CacheStore  # noqa: E402
from gpupolicy.schema import SchemaSet  # noqa: E402

PEER_KUBERNETES_VERSION = "1.33.0"
OUR_KUBERNETES_VERSION = "1.33"
TARGETS = {
    "schema_rules_speedup_min": 100.0,
    "end_to_end_over_floor_max": 1.5,
    "one_pool_change_seconds_max": 3.0,
    "peak_memory_mib_max": 1024.0,
}


@dataclass(frozen=True)
class Size:
    clusters: int
    pools: int
    teams: int
    teams_per_cluster: int
    peer_sample: int


SIZES = {
    "quick": Size(clusters=6, pools=60, teams=24, teams_per_cluster=20, peer_sample=1000),
    "default": Size(clusters=25, pools=250, teams=100, teams_per_cluster=50, peer_sample=5000),
    "full": Size(clusters=100, pools=1000, teams=200, teams_per_cluster=50, peer_sample=5000),
}


class Stopwatch:
    """Wall and CPU seconds (this process and its children, kubectl included) of a block."""

    def __enter__(self) -> Stopwatch:
        self.wall0, self.cpu0 = time.perf_counter(), _cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = _cpu_seconds() - self.cpu0


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


# --- measurements ------------------------------------------------------------------------------------------

def end_to_end(root: Path) -> tuple[dict, pipeline.RunResult]:
    with Stopwatch() as total:
        result = pipeline.run(root, use_cache=True)
        with Stopwatch() as reporting:
            report.FORMATTERS["text"](result, str(root))
    stages = {stage: round(seconds, 3) for stage, seconds in result.timings.items()}
    stages["report"] = round(reporting.wall, 3)
    return {"seconds": round(total.wall, 2), "cpu_seconds": round(total.cpu, 2), "stages": stages,
            "objects": result.objects, "clusters": len(result.rendered_clusters),
            "errors": result.errors, "warnings": result.warnings, "crashes": result.crashes,
            "peak_memory_mib": round(_peak_mib(), 1)}, result


def rendered_texts(root: Path) -> tuple[list[str], float]:
    """Every cluster's kubectl output, rendered again with nothing else running (our render stage alone, one
    kubectl per core, no cache), and the wall time it took. The end-to-end run cannot tell it: it loads the
    sources while kubectl renders."""
    names = pipeline.cluster_names(root)
    graph = kustomize.build_graph(root, [f"clusters/{n}" for n in names])
    with Stopwatch() as rendering:
        outputs = kustomize.render(root, [f"clusters/{n}" for n in names], graph, CacheStore.off())
    return [output.text for output in outputs.values()], rendering.wall


def floor(texts: list[str], render_seconds: float) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with Stopwatch() as parsing:
        objects = sum(1 for text in texts for doc in yaml.load_all(text, Loader=loader) if doc is not None)
    return {"render_seconds": round(render_seconds, 2), "parse_seconds": round(parsing.wall, 2),
            "seconds": round(render_seconds + parsing.wall, 2), "objects": objects}


def core_sample(texts: list[str], size: int, seed: int = 7) -> list[dict]:
    """A seeded sample of rendered objects of core kinds (the ones kubernetes-validate has schemas for)."""
    import kubernetes_validate

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    core = []
    for text in texts:
        for body in yaml.load_all(text, Loader=loader):
            if isinstance(body, dict) and pipeline._is_manifest(body) and _peer_knows(kubernetes_validate, body):
                core.append(body)
    rng = random.Random(seed)
    return rng.sample(core, size) if len(core) > size else core


_PEER_KINDS: dict[tuple[str, str], bool] = {}


def _peer_knows(kubernetes_validate, body: dict) -> bool:
    key = (str(body.get("apiVersion")), str(body.get("kind")))
    if key not in _PEER_KINDS:
        try:
            kubernetes_validate.validate(body, PEER_KUBERNETES_VERSION, strict=True)
            _PEER_KINDS[key] = True
        except kubernetes_validate.SchemaNotFoundError:
            _PEER_KINDS[key] = False
        except kubernetes_validate.ValidationError:
            _PEER_KINDS[key] = True
    return _PEER_KINDS[key]


def peer(sample: list[dict]) -> dict:
    import kubernetes_validate

    failures = 0
    with Stopwatch() as theirs:
        for body in sample:
            try:
                kubernetes_validate.validate(body, PEER_KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError:
                failures += 1
    with Stopwatch() as ours:  # a fresh SchemaSet: compile time included
        schemas = SchemaSet()
        our_errors = sum(len(schemas.validate(body, OUR_KUBERNETES_VERSION) or []) for body in sample)
    return {"objects": len(sample), "kubernetes_validate_seconds": round(theirs.wall, 3),
            "kubernetes_validate_invalid": failures, "ours_seconds": round(ours.wall, 4), "ours_errors": our_errors,
            "kubernetes_validate_ms_per_object": round(1000 * theirs.wall / max(len(sample), 1), 3),
            "schema_speedup_same_objects": round(theirs.wall / max(ours.wall, 1e-9), 1),
            "version": kubernetes_validate.__version__ if hasattr(kubernetes_validate, "__version__") else ""}


def one_pool_change(root: Path, plans: list, repeats: int = 3) -> dict:
    """Grow one pool by a node and touch its flavor (so its cluster renders again), then re-validate the way a
    contributor does: `gpupolicy validate --changed-since HEAD` as a command, interpreter start included.
    Each repeat edits the flavor again, so every run re-renders the cluster; the median is reported."""
    cluster = plans[len(plans) // 2]
    pool = cluster.pools[0]
    pool_file = root / "pools" / pool.name / "pool.yaml"
    zone = next(iter(pool.zones))
    pool_file.write_text(pool_file.read_text().replace(f"    {zone}: {pool.zones[zone]}\n",
                                                       f"    {zone}: {pool.zones[zone] + 1}\n"))
    flavor = root / "pools" / pool.name / "resourceflavor.yaml"
    original = flavor.read_text()
    command = [sys.executable, "-m", "gpupolicy", "validate", "--changed-since", "HEAD", "--repo", str(root),
               "--format", "json"]
    runs, report_json = [], {}
    for attempt in range(repeats):
        flavor.write_text(f"# grown by one node (bench, edit {attempt})\n" + original)
        with Stopwatch() as changed:
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
        runs.append(round(changed.wall, 2))
        report_json = json.loads(proc.stdout or "{}")
    selection = incremental.changed_clusters(root, "HEAD")
    with Stopwatch() as single:
        single_result = pipeline.run(root, clusters=[cluster.name], use_cache=True)
    return {"pool": pool.name, "cluster": cluster.name, "affected_clusters": selection.clusters,
            "changed_since_seconds": statistics.median(runs), "changed_since_runs": runs,
            "changed_since_objects": report_json.get("summary", {}).get("objects"),
            "cluster_seconds": round(single.wall, 2), "cluster_stages": _rounded(single_result.timings),
            "errors": single_result.errors}


def docs_generation(root: Path) -> dict:
    with Stopwatch() as docs, contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["docs", "--repo", str(root)])
    return {"seconds": round(docs.wall, 2), "exit": code}


def _rounded(timings: dict) -> dict:
    return {stage: round(seconds, 3) for stage, seconds in timings.items()}


# --- the table -----------------------------------------------------------------------------------------------

def summarize(results: dict) -> dict:
    e2e, flo, peer_result = results["end_to_end"], results["floor"], results["peer"]
    stages = e2e["stages"]
    ours_schema_rules = stages.get("schema", 0) + stages.get("rules", 0)
    theirs_all = peer_result["kubernetes_validate_ms_per_object"] / 1000 * e2e["objects"]
    incremental_seconds = results["one_pool_change"]["changed_since_seconds"]
    return {
        "kubernetes_validate_seconds_all_objects": round(theirs_all, 1),
        "ours_schema_plus_rules_seconds": round(ours_schema_rules, 2),
        "ratio_vs_kubernetes_validate": round(theirs_all / max(ours_schema_rules, 1e-9), 1),
        "end_to_end_over_floor": round(e2e["seconds"] / max(flo["seconds"], 1e-9), 2),
        "one_pool_change_seconds": incremental_seconds,
        "peak_memory_mib": e2e["peak_memory_mib"],
    }


def verdicts(summary: dict) -> dict:
    return {
        "schema_rules_speedup": summary["ratio_vs_kubernetes_validate"] >= TARGETS["schema_rules_speedup_min"],
        "end_to_end_over_floor": summary["end_to_end_over_floor"] <= TARGETS["end_to_end_over_floor_max"],
        "one_pool_change": summary["one_pool_change_seconds"] <= TARGETS["one_pool_change_seconds_max"],
        "peak_memory": summary["peak_memory_mib"] <= TARGETS["peak_memory_mib_max"],
    }


def table(results: dict) -> str:
    e2e, flo, peer_result, change = (results["end_to_end"], results["floor"], results["peer"],
                                     results["one_pool_change"])
    summary, passed = results["summary"], results["verdicts"]
    size = results["fleet"]
    rows = [("fleet", f"{size['clusters']} clusters, {size['pools']} pools, {size['teams']} teams, "
                      f"{e2e['objects']:,} rendered objects")]
    rows.append(("validate end to end", f"{e2e['seconds']:.1f} s wall ({e2e['cpu_seconds']:.1f} s CPU incl. kubectl)"))
    for stage, seconds in e2e["stages"].items():
        rows.append((f"  {stage}", f"{seconds:.2f} s"))
    rows += [
        ("floor: render + C-loader parse", f"{flo['seconds']:.1f} s ({flo['render_seconds']:.1f} + "
                                           f"{flo['parse_seconds']:.1f})"),
        ("end to end / floor", f"{summary['end_to_end_over_floor']:.2f}x (target <= 1.5x) "
                               f"{_mark(passed['end_to_end_over_floor'])}"),
        (f"kubernetes-validate --strict, {peer_result['objects']:,} objects",
         f"{peer_result['kubernetes_validate_seconds']:.1f} s ({peer_result['kubernetes_validate_ms_per_object']:.2f} "
         "ms/object)"),
        ("ours (jsonschema-rs), same objects", f"{peer_result['ours_seconds']:.3f} s incl. compile: "
                                               f"{peer_result['schema_speedup_same_objects']:,.0f}x faster"),
        ("kubernetes-validate, all objects (scaled)", f"{summary['kubernetes_validate_seconds_all_objects']:.1f} s"),
        ("ours schema + rules, all objects", f"{summary['ours_schema_plus_rules_seconds']:.2f} s"),
        ("ratio_vs_kubernetes_validate", f"{summary['ratio_vs_kubernetes_validate']:,.1f}x (target >= 100x) "
                                         f"{_mark(passed['schema_rules_speedup'])}"),
        ("one-pool change, `validate --changed-since HEAD`",
         f"{change['changed_since_seconds']:.2f} s median of {change['changed_since_runs']}, re-rendering "
         f"{len(change['affected_clusters'])} cluster (target < 3 s) {_mark(passed['one_pool_change'])}"),
        ("same cluster again, render cached (in process)", f"{change['cluster_seconds']:.2f} s"),
        ("gpupolicy docs", f"{results['docs']['seconds']:.1f} s (exit {results['docs']['exit']})"),
        ("peak memory (RSS)", f"{e2e['peak_memory_mib']:.0f} MiB (target < 1024) {_mark(passed['peak_memory'])}"),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label.ljust(width)}  {value}" for label, value in rows)


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# --- main ------------------------------------------------------------------------------------------------

def run(size_name: str, size: Size, workdir: Path, seed: int) -> dict:
    root = workdir / "fleet"
    print(f"bench: generating {size.clusters} clusters x {size.pools} pools in {root}", file=sys.stderr)
    with Stopwatch() as generating:
        plans = generate_fleet.generate(root, size.clusters, size.pools, size.teams, size.teams_per_cluster,
                                        seed=seed, git=True)
    os.environ["GPUPOLICY_CACHE_DIR"] = str(workdir / "render-cache")  # cold: nothing rendered yet
    print("bench: validate (cold render cache)", file=sys.stderr)
    e2e, result = end_to_end(root)
    del result
    texts, render_seconds = rendered_texts(root)
    print("bench: floor, peer", file=sys.stderr)
    results = {
        "size": size_name,
        "fleet": {"clusters": size.clusters, "pools": size.pools, "teams": len({t for p in plans for t in p.teams}),
                  "teams_per_cluster": size.teams_per_cluster, "seed": seed,
                  "generate_seconds": round(generating.wall, 2)},
        "end_to_end": e2e,
        "floor": floor(texts, render_seconds),
    }
    results["peer"] = peer(core_sample(texts, size.peer_sample))
    del texts
    print("bench: one-pool change, docs", file=sys.stderr)
    results["one_pool_change"] = one_pool_change(root, plans)
    results["docs"] = docs_generation(root)
    results["summary"] = summarize(results)
    results["verdicts"] = verdicts(results["summary"])
    results["targets"] = TARGETS
    results["ratio_vs_kubernetes_validate"] = results["summary"]["ratio_vs_kubernetes_validate"]
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform(), "load_average_at_end": list(os.getloadavg())}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="a small fleet (about a minute)")
    group.add_argument("--full", action="store_true", help="100 clusters, 1,000 pools, ~52,000 objects")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, default=HERE / "results.json")
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args(argv)
    size_name = "quick" if args.quick else "full" if args.full else "default"
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        results = run(size_name, SIZES[size_name], args.keep, args.seed)
    else:
        with tempfile.TemporaryDirectory(prefix="gpupolicy-bench-") as workdir:
            results = run(size_name, SIZES[size_name], Path(workdir), args.seed)
    print(table(results))
    args.output.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    print(f"bench: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
