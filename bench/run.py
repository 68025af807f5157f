"""`make bench`: validate a generated fleet and compare it with its peers and a floor, measured in the same
run.

Measures, on a synthetic fleet written by bench/generate_fleet.py, each of the first three `peers.REPEATS`
times (min / median / max reported):
- end-to-end `validate` (pipeline.run with a cold render cache), per stage, plus the report;
- the floor: `kubectl kustomize` (our render stage alone) plus parsing its output with PyYAML's C loader;
- the peers, on exactly the same objects (bench/peers.py): the `kubernetes-validate --strict` command against
  the `gpupolicy validate` command (the ratio to quote), and `jsonschema` with kept validators against our
  SchemaSet in process;
- incremental validation after a one-pool change (--changed-since HEAD, and --cluster of the affected
  cluster);
- `gpupolicy docs` generation; peak memory (ru_maxrss) after the first end-to-end run.
Writes bench/results.json (see docs/operations/performance.md for how to read it).

    python bench/run.py            # 25 clusters, ~13,000 objects, peers on up to 2,000 distinct objects
    (about 9 minutes) python bench/run.py --quick    # 6 clusters, peers on 500 objects (about two minutes)
    python bench/run.py --full     # 100 clusters x 1,000 pools, ~52,000 objects (about 25 minutes)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import resource
import shutil
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
import peers  # noqa: E402

from gpupolicy import cli, pipeline, report  # noqa: E402
from gpupolicy.infra.cache.store import CacheStore  # noqa: E402
from gpupolicy.pipeline import incremental  # noqa: E402
from gpupolicy.pipeline.render import kustomize  # noqa: E402

TARGETS = {
    "command_ratio_vs_kubernetes_validate_min": 100.0,
    "end_to_end_over_render_max": 1.1,
    "end_to_end_over_floor_max": 1.5,
    "one_pool_change_seconds_max": 3.0,
    "reference_warm_over_floor_max": 1.3,
    "help_over_yamllint_version_max": 2.0,
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
    "quick": Size(clusters=6, pools=60, teams=24, teams_per_cluster=20, peer_sample=500),
    "default": Size(clusters=25, pools=250, teams=100, teams_per_cluster=50, peer_sample=2000),
    "full": Size(clusters=100, pools=1000, teams=200, teams_per_cluster=50, peer_sample=2000),
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
    return {
        "seconds": round(total.wall, 2),
        "cpu_seconds": round(total.cpu, 2),
        "stages": stages,
        "objects": result.objects,
        "clusters": len(result.rendered_clusters),
        "errors": result.errors,
        "warnings": result.warnings,
        "crashes": result.crashes,
        "peak_memory_mib": round(_peak_mib(), 1),
    }, result


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
    return {
        "render_seconds": round(render_seconds, 2),
        "parse_seconds": round(parsing.wall, 2),
        "seconds": round(render_seconds + parsing.wall, 2),
        "objects": objects,
    }


def rendered_bodies(texts: list[str]) -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [
        body for text in texts for body in yaml.load_all(text, Loader=loader) if pipeline._is_manifest(body)
    ]


def compare_with_peers(workdir: Path, fleet: Path, texts: list[str], size: int) -> dict:
    """Both peers on the same seeded sample of the rendered objects kubernetes-validate can check."""
    sample = peers.distinct_sample(peers.peer_checkable(rendered_bodies(texts)), size)
    sample_root = workdir / "peer-sample"
    objects_file = peers.write_sample_repository(sample_root, fleet, sample)
    return {
        "command": peers.command_against_command(
            sample_root, objects_file, len(sample), workdir / "peer-cache"
        ),
        "kept_validators": peers.kept_validators(sample),
        "kubernetes_validate_version": _version("kubernetes-validate"),
        "jsonschema_version": _version("jsonschema"),
    }


def _version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


def one_pool_change(root: Path, plans: list, repeats: int = 3) -> dict:
    """Grow one pool by a node and touch its flavor (so its cluster renders again), then re-validate the way a
    contributor does: `gpupolicy validate --changed-since HEAD` as a command, interpreter start included.
    Each repeat edits the flavor again, so every run re-renders the cluster; the median is reported."""
    cluster = plans[len(plans) // 2]
    pool = cluster.pools[0]
    pool_file = root / "pools" / pool.name / "pool.yaml"
    zone = next(iter(pool.zones))
    pool_file.write_text(
        pool_file.read_text().replace(
            f"    {zone}: {pool.zones[zone]}\n", f"    {zone}: {pool.zones[zone] + 1}\n"
        )
    )
    flavor = root / "pools" / pool.name / "resourceflavor.yaml"
    original = flavor.read_text()
    command = [
        sys.executable,
        "-m",
        "gpupolicy",
        "validate",
        "--changed-since",
        "HEAD",
        "--repo",
        str(root),
        "--format",
        "json",
    ]
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
    return {
        "pool": pool.name,
        "cluster": cluster.name,
        "affected_clusters": selection.clusters,
        "changed_since_seconds": statistics.median(runs),
        "changed_since_runs": runs,
        "changed_since_objects": report_json.get("summary", {}).get("objects"),
        "cluster_seconds": round(single.wall, 2),
        "cluster_stages": _rounded(single_result.timings),
        "errors": single_result.errors,
    }


def docs_generation(root: Path) -> dict:
    with (
        Stopwatch() as docs,
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        code = cli.main(["docs", "--repo", str(root)])
    return {"seconds": round(docs.wall, 2), "exit": code}


def _rounded(timings: dict) -> dict:
    return {stage: round(seconds, 3) for stage, seconds in timings.items()}


# --- the table
# -----------------------------------------------------------------------------------------------


def summarize(results: dict) -> dict:
    e2e, flo, command, kept = (
        results["end_to_end"],
        results["floor"],
        results["peers"]["command"],
        results["peers"]["kept_validators"],
    )
    stages = e2e["stages"]
    ours_schema_rules = stages.get("schema", 0) + stages.get("rules", 0)
    theirs_all = command["kubernetes_validate_ms_per_object"] / 1000 * e2e["objects"]
    return {
        "ratio_vs_kubernetes_validate": command["ratio"],
        "ratio_vs_jsonschema_kept_validators": kept["ratio"],
        "end_to_end_over_render": peers.ratio_spread(
            e2e["seconds"]["runs"], flo["render_seconds"]["runs"], 2
        ),
        "end_to_end_over_floor": peers.ratio_spread(e2e["seconds"]["runs"], flo["seconds"]["runs"], 2),
        # The old headline, kept under its own name: not what a user measures (see the performance page).
        "schema_rules_over_kubernetes_validate_scaled": round(theirs_all / max(ours_schema_rules, 1e-9), 1),
        "one_pool_change_seconds": results["one_pool_change"]["changed_since_seconds"],
        "reference_warm_over_floor": results["fixed_costs"]["warm_over_floor"],
        "help_over_yamllint_version": results["fixed_costs"]["help_over_yamllint"],
        "peak_memory_mib": e2e["peak_memory_mib"],
    }


def verdicts(summary: dict) -> dict:
    return {
        "command_ratio_vs_kubernetes_validate": summary["ratio_vs_kubernetes_validate"]["median"]
        >= TARGETS["command_ratio_vs_kubernetes_validate_min"],
        "end_to_end_over_render": summary["end_to_end_over_render"]["median"]
        <= TARGETS["end_to_end_over_render_max"],
        "end_to_end_over_floor": summary["end_to_end_over_floor"]["median"]
        <= TARGETS["end_to_end_over_floor_max"],
        "one_pool_change": summary["one_pool_change_seconds"] <= TARGETS["one_pool_change_seconds_max"],
        "reference_warm_over_floor": summary["reference_warm_over_floor"]["median"]
        <= TARGETS["reference_warm_over_floor_max"],
        "help_over_yamllint_version": summary["help_over_yamllint_version"]["median"]
        <= TARGETS["help_over_yamllint_version_max"],
        "peak_memory": summary["peak_memory_mib"] <= TARGETS["peak_memory_mib_max"],
    }


def _spread_text(values: dict, unit: str = " s", digits: int = 2) -> str:
    return (
        f"{values['median']:.{digits}f}{unit} (min {values['min']:.{digits}f}, "
        f"max {values['max']:.{digits}f})"
    )


def table(results: dict) -> str:
    e2e, flo, change = results["end_to_end"], results["floor"], results["one_pool_change"]
    command, kept = results["peers"]["command"], results["peers"]["kept_validators"]
    summary, passed, size = results["summary"], results["verdicts"], results["fleet"]
    fixed = results["fixed_costs"]
    rows = [
        (
            "fleet",
            f"{size['clusters']} clusters, {size['pools']} pools, {size['teams']} teams, "
            f"{e2e['objects']:,} rendered objects",
        )
    ]
    rows.append(("validate end to end (command, cold)", f"{_spread_text(e2e['seconds'])} wall"))
    rows.append(
        (
            "validate end to end (in process, cold)",
            f"{e2e['in_process_seconds']:.2f} s wall, {e2e['cpu_seconds']:.1f} s CPU incl. kubectl; stages:",
        )
    )
    for stage, seconds in e2e["stages"].items():
        rows.append((f"  {stage}", f"{seconds:.2f} s"))
    rows += [
        ("render alone (kubectl kustomize)", _spread_text(flo["render_seconds"])),
        ("floor: render + C-loader parse", _spread_text(flo["seconds"])),
        (
            "end to end / render alone",
            f"{_spread_text(summary['end_to_end_over_render'], 'x')} (target <= "
            f"1.1x) {_mark(passed['end_to_end_over_render'])}",
        ),
        (
            "end to end / floor",
            f"{_spread_text(summary['end_to_end_over_floor'], 'x')} (target <= 1.5x) "
            f"{_mark(passed['end_to_end_over_floor'])}",
        ),
        (
            f"kubernetes-validate --strict (command), {command['objects']:,} core objects",
            f"{_spread_text(command['kubernetes_validate_seconds'])}, "
            f"{command['kubernetes_validate_ms_per_object']:.2f} ms/object",
        ),
        (
            "gpupolicy validate (command), same objects",
            f"{_spread_text(command['ours_seconds'])}, {command['ours_ms_per_object']:.3f} ms/object",
        ),
        (
            "ratio_vs_kubernetes_validate (command against command)",
            f"{_spread_text(command['ratio'], 'x', 1)} (target >= 100x) "
            f"{_mark(passed['command_ratio_vs_kubernetes_validate'])}",
        ),
        (
            "  (ours with every cache warm, for context)",
            f"{_spread_text(command['ours_warm_seconds'])}: {command['ratio_warm_caches']['median']:.1f}x",
        ),
        (
            "jsonschema, kept validators (in process)",
            f"{_spread_text(kept['jsonschema_seconds'], ' s', 3)}, "
            f"{kept['jsonschema_ms_per_object']:.3f} ms/object",
        ),
        (
            "ours, SchemaSet (in process), same objects",
            f"{_spread_text(kept['ours_seconds'], ' s', 3)}, {kept['ours_ms_per_object']:.4f} ms/object",
        ),
        ("ratio_vs_jsonschema_kept_validators", _spread_text(kept["ratio"], "x", 1)),
        (
            "(old) schema + rules vs kubernetes-validate scaled to all objects",
            f"{summary['schema_rules_over_kubernetes_validate_scaled']:,.1f}x (not a like-for-like figure)",
        ),
        (
            "one-pool change, `validate --changed-since HEAD`",
            f"{change['changed_since_seconds']:.2f} s median of {change['changed_since_runs']}, re-rendering "
            f"{len(change['affected_clusters'])} cluster (target < 3 s) {_mark(passed['one_pool_change'])}",
        ),
        ("same cluster again, render cached (in process)", f"{change['cluster_seconds']:.2f} s"),
        ("gpupolicy docs", f"{results['docs']['seconds']:.1f} s (exit {results['docs']['exit']})"),
        ("this repository: warm `gpupolicy validate`", _spread_text(fixed["warm_validate_seconds"])),
        ("  floor: start and import what validate imports", _spread_text(fixed["floor_seconds"])),
        (
            "  warm / floor",
            f"{_spread_text(fixed['warm_over_floor'], 'x')} (target <= 1.3x) "
            f"{_mark(passed['reference_warm_over_floor'])}",
        ),
        (
            "`gpupolicy --help` / `yamllint --version`",
            f"{_spread_text(fixed['help_seconds'], ' s', 3)} / "
            f"{_spread_text(fixed['yamllint_version_seconds'], ' s', 3)} = "
            f"{fixed['help_over_yamllint']['median']:.2f}x (target <= 2x) "
            f"{_mark(passed['help_over_yamllint_version'])}",
        ),
        (
            "peak memory (RSS)",
            f"{e2e['peak_memory_mib']:.0f} MiB (target < 1024) {_mark(passed['peak_memory'])}",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label.ljust(width)}  {value}" for label, value in rows)


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# --- main ------------------------------------------------------------------------------------------------


def compile_toolkit() -> int:
    """Byte-compile the toolkit's modules, as pip does when it installs a package. The peers come from
    site-packages, already compiled; an editable install of ours under PYTHONDONTWRITEBYTECODE (set on the
    development machines) would compile about 200 modules from source in every command, 0.2-0.3 s that no
    installed copy pays. Returns how many modules were looked at."""
    import compileall

    package = Path(pipeline.__file__).resolve().parent
    compileall.compile_dir(package, quiet=1, workers=1)
    return sum(1 for _ in package.rglob("*.py"))


def run(size_name: str, size: Size, workdir: Path, seed: int) -> dict:
    modules = compile_toolkit()
    print(f"bench: {modules} toolkit modules byte-compiled, as an install would have them", file=sys.stderr)
    root = workdir / "fleet"
    print(f"bench: generating {size.clusters} clusters x {size.pools} pools in {root}", file=sys.stderr)
    with Stopwatch() as generating:
        plans = generate_fleet.generate(
            root, size.clusters, size.pools, size.teams, size.teams_per_cluster, seed=seed, git=True
        )
    print(
        f"bench: validate in process, then {peers.REPEATS} times as a command, each with a cold cache",
        file=sys.stderr,
    )
    e2e = repeated_end_to_end(root, workdir)
    print(f"bench: the floor, {peers.REPEATS} times", file=sys.stderr)
    floors = [floor(*rendered_texts(root)) for _ in range(peers.REPEATS)]
    texts, _ = rendered_texts(root)
    print("bench: peers", file=sys.stderr)
    results = {
        "size": size_name,
        "fleet": {
            "clusters": size.clusters,
            "pools": size.pools,
            "teams": len({t for p in plans for t in p.teams}),
            "teams_per_cluster": size.teams_per_cluster,
            "seed": seed,
            "generate_seconds": round(generating.wall, 2),
        },
        "end_to_end": e2e,
        "floor": {
            "render_seconds": peers.spread([f["render_seconds"] for f in floors], 2),
            "parse_seconds": peers.spread([f["parse_seconds"] for f in floors], 2),
            "seconds": peers.spread([f["seconds"] for f in floors], 2),
            "objects": floors[0]["objects"],
        },
        "peers": compare_with_peers(workdir, root, texts, size.peer_sample),
    }
    del texts
    print("bench: one-pool change, docs", file=sys.stderr)
    results["one_pool_change"] = one_pool_change(root, plans)
    results["docs"] = docs_generation(root)
    print("bench: fixed costs on this repository", file=sys.stderr)
    results["fixed_costs"] = peers.fixed_costs(generate_fleet.SOURCE_REPO, workdir / "reference-cache")
    results["summary"] = summarize(results)
    results["verdicts"] = verdicts(results["summary"])
    results["targets"] = TARGETS
    results["ratio_vs_kubernetes_validate"] = results["summary"]["ratio_vs_kubernetes_validate"]["median"]
    results["method"] = METHOD
    results["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_end": list(os.getloadavg()),
    }
    return results


METHOD = {
    "bytecode": "the toolkit's modules are byte-compiled before anything is timed, as pip compiles an "
    "installed package (the peers' are, in site-packages); without it, an editable install under "
    "PYTHONDONTWRITEBYTECODE compiles every module in every command",
    "repeats": f"each timed measurement runs {peers.REPEATS} times in a row; min / median / max are "
    "reported and a "
    "ratio is the median over the median, with the lowest and highest per-repeat ratio",
    "ratio_vs_kubernetes_validate": "command against command on the same objects: `kubernetes-validate "
    "--strict` on a file of a seeded sample of rendered core objects (the only ones it can "
    "check), against `gpupolicy validate` on a one-cluster repository whose "
    "overlay renders that file (render cache warm, every other cache cold); interpreter "
    "start, parsing, validation (and our rules) included on both sides",
    "ratio_vs_jsonschema_kept_validators": "in process, same objects: the jsonschema library with one "
    "validator per kind built once, against our SchemaSet; compilation included",
    "end_to_end_over_render": "the `gpupolicy validate` command, cold (a new process and an empty cache "
    "folder each run), over `kubectl kustomize` of every cluster alone (one per core, no cache)",
    "end_to_end_over_floor": "the same cold command over render alone plus parsing its output with PyYAML's "
    "C loader",
    "reference_warm_over_floor": "this repository, a warm `gpupolicy validate` (after one untimed run) over "
    "a process that only starts and imports what validate imports, rules included; "
    "median of 5",
    "help_over_yamllint_version": "`gpupolicy --help` over `yamllint --version`, as commands; median of 5",
    "schema_rules_over_kubernetes_validate_scaled": "the old headline: kubernetes-validate's time per object "
    "times all rendered objects (custom resources included, which it "
    "cannot check) over our schema and rules stages alone",
}


def repeated_end_to_end(root: Path, workdir: Path) -> dict:
    """The stages and peak memory of one cold run in this process, and the wall seconds of `peers.REPEATS`
    cold runs of the `gpupolicy validate` command, each a new process with a new, empty cache folder (runs in
    one process would find its modules imported and its memos filled)."""
    os.environ["GPUPOLICY_CACHE_DIR"] = str(workdir / "render-cache")  # cold: nothing rendered yet
    measured, result = end_to_end(root)
    del result
    command = [sys.executable, "-m", "gpupolicy", "validate", "--repo", str(root), "--format", "json"]
    seconds = []
    for attempt in range(peers.REPEATS):
        cache_dir = workdir / f"command-cache-{attempt}"
        with Stopwatch() as run_once:
            subprocess.run(
                command,
                capture_output=True,
                check=False,
                env={**os.environ, "GPUPOLICY_CACHE_DIR": str(cache_dir)},
            )
        seconds.append(run_once.wall)
        shutil.rmtree(cache_dir, ignore_errors=True)
    return {**measured, "in_process_seconds": measured["seconds"], "seconds": peers.spread(seconds, 2)}


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
