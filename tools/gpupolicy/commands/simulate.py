"""`gpupolicy simulate`: replay a workload against a cluster's policy and against a naive baseline.

With no arguments it replays the synthetic trace shipped in the package on the first cluster of the
repository. `--workload mixed` builds the congested mixed workload instead (ITP training jobs and openb
inference pods from --traces DIR, mapped to the fleet's teams, arrivals sped up until the baseline queues; see
simulate/mixed.py and docs/operations/simulation.md). The baseline is the same hardware run as whole GPUs, one
strict-FIFO queue, no sharing and no preemption. The report (Markdown + PNG) goes to --out DIR, by default
artifacts/simulation/ in the repository (git-ignored). The output ends with a verdict that names each metric
the proposed policy makes worse than the baseline by more than --worse-by percent (waits only when they grow
by 5 minutes or more). With --base REV the policy of git revision REV and the working tree's replay the same
jobs (one scale, one seed) beside one baseline; the report gives each headline figure for both with the
change, and the verdict names what the working tree makes worse than REV. Exit codes: 0 every job ran, 1 some
jobs were never scheduled under the proposed policy, 2 could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from ..infra import repopath
from . import COMMANDS, FORMAT_HELP
from ._fleet import DEFAULT_TRACES, fleet_and_cluster, load_fleet_or_error, traces_folder

NAME = "simulate"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
SHIPPED_TRACE = "synthetic-week.csv"
DEFAULT_OUT = "artifacts/simulation"
# verdict.DEFAULT_WORSE_BY, not imported here to keep --help fast (a test pins it)  # artifacts/ is
# git-ignored; make diff/sarif/junit write there too
WORSE_BY_HELP_DEFAULT = "10"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..simulate.placement import DEFAULT_PLACEMENT, PLACEMENTS

    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--cluster", metavar="NAME", help="cluster to replay on (default: the first one)")
    parser.add_argument("--trace", metavar="FILE", type=Path, help="trace file (default: the shipped one)")
    parser.add_argument("--trace-format", choices=("csv", "openb", "itp"), help="detected when omitted")
    parser.add_argument(
        "--workload",
        choices=("mixed",),
        help="build a workload instead of reading --trace: mixed = ITP training + openb inference",
    )
    parser.add_argument(
        "--traces",
        metavar="DIR",
        type=Path,
        help=f"where --workload mixed reads ITP and openb (default: {DEFAULT_TRACES} next to the repository)",
    )
    parser.add_argument(
        "--scale",
        metavar="T:I",
        default="auto",
        help="--workload mixed: arrival-rate factors for training and inference, or auto "
        "(the smallest whose offered load is at least 0.9 of each pool class's cards; default); "
        "the factors used are printed in the report",
    )
    parser.add_argument(
        "--days", type=int, default=7, metavar="N", help="--workload mixed: days replayed (default 7)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="--workload mixed: where the replayed windows sit in the traces (0: ITP's first "
        "days, openb's last; another seed draws them; default 0); with --busy-devices it also seeds "
        "the before's busy-card crashes",
    )
    parser.add_argument(
        "--busy-devices",
        action="store_true",
        help="time-sliced pods take one replica each and may land where a neighbour holds "
        "the card's memory: count those starts with the startup check (per pool.yaml) and "
        "without it (an extra column)",
    )
    parser.add_argument(
        "--policy",
        choices=sorted(PLACEMENTS),
        default=DEFAULT_PLACEMENT,
        help=f"placement score of the proposed policy (default {DEFAULT_PLACEMENT})",
    )
    parser.add_argument(
        "--fail-nodes",
        metavar="SPEC",
        default="",
        help="inject node failures: POOL:COUNT@TIME[+DOWNTIME],... e.g. pool-a:2@3600+1h",
    )
    parser.add_argument(
        "--map",
        metavar="TEAM=QUEUE",
        action="append",
        default=[],
        help="send a trace team to a ClusterQueue (repeatable); others are dealt round-robin",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="replay only the first N GPU jobs of the trace file (reading stops there)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        help=f"report directory (default: {DEFAULT_OUT} in the repository, git-ignored)",
    )
    parser.add_argument(
        "--worse-by",
        metavar="PERCENT",
        type=float,
        default=None,  # None: verdict's default
        help=f"the verdict names metrics worse than the baseline by more than this (default "
        f"{WORSE_BY_HELP_DEFAULT})",
    )
    parser.add_argument(
        "--events",
        metavar="FILE",
        type=Path,
        help="write one JSON line per job event of every replay, each with its policy: baseline and "
        "proposed (base and head with --base), and with --busy-devices the before (arrived, admitted with "
        "its flavor, started with its nodes, preempted by whom, released, failed at start, finished)",
    )
    parser.add_argument(
        "--before",
        choices=("brief", "whole-node"),
        default="brief",
        help="with --busy-devices, the before replayed: the brief's (whole-GPU FIFO, starts "
        "crash on busy cards) or whole-node (each job holds whole nodes; default brief)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="WORKLOAD=DURATION",
        default="",
        help="checkpoint interval per kind of work for jobs whose trace gives none, "
        "comma-separated (default training=1h,batch=1h,inference=0,notebook=0; "
        "0 = a preempted job starts over)",
    )
    parser.add_argument(
        "--base",
        metavar="REV",
        help="also replay the policy of git revision REV (e.g. origin/main) on the same "
        "jobs, scale and seed; report each headline figure base vs the working tree",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)


def _fail(message: str) -> int:
    print(f"gpupolicy simulate: {message}", file=sys.stderr)
    return 2


def _mapping(items: list[str]) -> tuple[dict[str, str] | None, str]:
    """--map's TEAM=QUEUE items, or None and why: a team sent to two queues would go to the last one
    given, silently."""
    mapping: dict[str, str] = {}
    for item in items:
        team, sep, queue = item.partition("=")
        if not sep or not team or not queue:
            return None, "--map takes TEAM=QUEUE"
        if mapping.setdefault(team, queue) != queue:
            return None, f"--map sends team {team} to both {mapping[team]} and {queue}"
    return mapping, ""


def run(args: argparse.Namespace) -> int:
    from ..simulate.collector import collector_paused

    with collector_paused():  # a bounded trace in, reports out, no cycles between (collector.py)
        return _simulate(args)


def _simulate(args: argparse.Namespace) -> int:
    from ..errors import ToolError
    from ..infra.transaction import write_files
    from ..simulate import actual, compare
    from ..simulate.busy import startup_checks
    from ..simulate.checkpoints import parse_intervals, with_checkpoints
    from ..simulate.failures import parse_failures
    from ..simulate.report import (
        comparison_rows,
        kueue_line,
        kueue_settings,
        markdown_table,
        plot_images,
        render_markdown,
        summary_rows,
    )
    from ..simulate.traces import TraceError, read_trace
    from ..simulate.verdict import DEFAULT_WORSE_BY, verdict_lines, worse_metrics

    mapping, error = _mapping(args.map)
    if mapping is None:
        return _fail(error)
    if args.workload and args.trace is not None:
        return _fail("--workload builds its own jobs: pass either --workload or --trace")
    if args.workload and (args.days <= 0 or _scales(args.scale) is None):
        return _fail(
            "--days takes a positive number and --scale auto or TRAINING:INFERENCE factors, e.g. 1:3"
        )
    if args.workload and args.seed < 0:
        return _fail("--seed takes a number of 0 or more")
    if args.limit is not None and args.limit < 1:
        return _fail("--limit takes a positive number of jobs")
    if args.worse_by is not None and not 0 <= args.worse_by < 10_000:
        return _fail("--worse-by takes a percentage from 0 up, such as 10")
    out, error = repopath.output_folder(args.repo, args.out, DEFAULT_OUT)
    if out is None:
        return _fail(error)
    if args.base is not None and (error := _unknown_revision(args)):
        return _fail(error)  # before a workload is built for nothing
    try:
        failures = parse_failures(args.fail_nodes)
    except ValueError as exc:
        return _fail(str(exc))
    cluster, error = _cluster(args)
    if cluster is None:
        return _fail(error)
    try:
        if args.workload == "mixed":
            trace = _mixed_trace(args, cluster)
        elif args.trace is None:
            with resources.as_file(resources.files("gpupolicy") / "data" / "traces" / SHIPPED_TRACE) as path:
                trace = read_trace(path, "csv")
        else:
            trace = read_trace(args.trace, args.trace_format, args.limit)
    except TraceError as exc:
        return _fail(str(exc))
    jobs = trace.jobs[: args.limit] if args.limit else trace.jobs
    if not jobs:
        return _fail(f"{trace.source}: no GPU jobs in the trace")
    try:
        jobs = with_checkpoints(jobs, parse_intervals(args.checkpoint))
    except ValueError as exc:
        return _fail(str(exc))
    unknown = sorted({q for q in mapping.values() if q not in cluster.cluster_queues})
    if unknown:
        return _fail(f"--map names unknown ClusterQueue(s) {', '.join(unknown)} in cluster {cluster.name}")
    if args.base is not None:
        return _run_base(args, cluster, trace, jobs, failures, mapping, out)
    started = time.perf_counter()
    try:
        checks = startup_checks(Path(args.repo), cluster) if args.busy_devices else None
        events: dict[str, list] | None = {} if args.events is not None else None
        busy_replays = _busy_replays_beside(args, cluster, jobs, failures, mapping, events)
        result = compare(cluster, jobs, failures, mapping, args.policy, checks, events)
        unchecked, brief = busy_replays() if busy_replays else (None, None)
    except (ValueError, ToolError) as exc:  # ToolError: a cluster the simulator refuses (too big, no pools)
        return _fail(str(exc))
    seconds = time.perf_counter() - started
    settings = kueue_settings(cluster)
    before, after = result.before_summary, result.after_summary
    worse_by = DEFAULT_WORSE_BY if args.worse_by is None else args.worse_by / 100
    worse = worse_metrics(before, after, worse_by)
    verdict = verdict_lines(worse, worse_by)
    images = {} if args.no_plots else plot_images(result.before, result.after, before, after)
    context = [
        f"- cluster: `{cluster.name}`; trace: `{trace.source}` ({trace.format}, {len(jobs)} GPU jobs, "
        f"{trace.skipped} rows without GPUs dropped)",
        f"- proposed placement: {args.policy}; failures: `{args.fail_nodes or 'none'}`",
        kueue_line(settings),
        f"- replay time: {seconds:.2f} s for {result.before.events + result.after.events} events",
    ]
    if unchecked:
        context.append(
            f"- busy devices (time-sliced pods as one replica each): {after.busy_starts} starts "
            f"failed with the startup check as pool.yaml sets it, {unchecked.busy_starts} without it "
            f"({unchecked.lost_to_busy_devices} jobs lost after the Job's backoff limit)"
        )
        context.append(_before_line(args, brief, unchecked))
    markdown = render_markdown("Simulation report", context, before, after, list(images), verdict)
    # estimated vs actual: the replay's waits beside those the trace's history observed (simulate/actual.py)
    observed = actual.compare_waits(result.after, trace.observed_waits) if trace.observed_waits else []
    if observed:
        markdown += "\n" + actual.markdown_section(observed, after.policy)
    files = {out / "report.md": markdown, **{out / name: data for name, data in images.items()}}
    if events is not None:
        files[args.events] = "".join(
            json.dumps({"policy": policy, **event}, sort_keys=True) + "\n"
            for policy, log in events.items()
            for event in log
        )
    try:
        write_files(files)
    except ToolError as exc:
        return _fail(f"cannot write the report to {out}: {exc}")
    if args.format == "json":
        extra = (
            {
                "proposed_without_startup_check": asdict(unchecked),
                "before": asdict(brief.summary),
                "before_variant": args.before,
                "before_start_failure_rate": brief.rate,
            }
            if unchecked
            else {}
        )
        print(
            json.dumps(
                {
                    "cluster": cluster.name,
                    "trace": trace.source,
                    "seconds": seconds,
                    "baseline": asdict(before),
                    "proposed": asdict(after),
                    **extra,
                    "kueue": settings,
                    "report": str(out),
                    "verdict": {"worse_by": worse_by, "worse": [asdict(item) for item in worse]},
                    **({"estimated_vs_actual": actual.as_json(observed)} if observed else {}),
                },
                indent=2,
            )
        )
    else:
        print(f"cluster {cluster.name}, trace {trace.source} ({len(jobs)} jobs), {seconds:.2f} s\n")
        if unchecked:
            label = (
                "before (whole node per job)" if args.before == "whole-node" else "before (busy-card crashes)"
            )
            print(
                markdown_table(
                    ("metric", "baseline", label, "proposed", "proposed without the startup check"),
                    summary_rows([before, brief.summary, after, unchecked]),
                )
            )
        else:
            print(markdown_table(("metric", "baseline", "proposed"), comparison_rows(before, after)))
        if observed:
            print(f"\nEstimated ({after.policy}) vs actual waits per queue:")
            print(markdown_table(actual.HEADER, actual.table_rows(observed)))
        print(f"\nreport: {out / 'report.md'}")
        print("\n".join(verdict))
    return 1 if after.never_scheduled else 0


@dataclass
class _Before:
    rate: float
    summary: object


def _busy_replays_beside(args: argparse.Namespace, cluster, jobs, failures, mapping, events: dict | None):
    """With `--busy-devices`, `_busy_replays` started beside the replays that run next (simulate/beside.py):
    a function giving (the summary without the startup check, the before), which puts the before's job events
    in `events` under `before`; None without `--busy-devices`."""
    from ..simulate import beside

    if not args.busy_devices:
        return None
    answer = beside.started(_busy_replays, args, cluster, jobs, failures, mapping, events is not None)

    def replays():
        unchecked, brief, log = answer()
        if events is not None:
            events["before"] = log
        return unchecked, brief

    return replays


def _busy_replays(args: argparse.Namespace, cluster, jobs, failures, mapping, logged: bool):
    """(the policy's summary without the startup check, the before, the before's job events when `logged`):
    the before crashes at the rate the first of them measures."""
    unchecked = _without_startup_check(args, cluster, jobs, failures, mapping)
    log = [] if logged else None
    return unchecked, _before(args, cluster, jobs, failures, mapping, unchecked, log), log


def _before(
    args: argparse.Namespace, cluster, jobs, failures, mapping, unchecked, log: list | None = None
) -> _Before:
    """The brief's "before" (policy.before) at the busy-start rate of the replay without the startup check,
    or, with `--before whole-node`, the whole-node-per-job variant (policy.whole_node_before): it crashes
    none. With `log`, its job events go there (the log's policy `before`), so its waits can be traced too."""
    from ..simulate import replay
    from ..simulate.metrics import summarize
    from ..simulate.policy import before, busy_start_rate, whole_node_before

    if args.before == "whole-node":
        return _Before(0.0, summarize(replay(whole_node_before(cluster), jobs, failures, mapping, log)))
    rate = busy_start_rate(unchecked.jobs_crashed_at_start, unchecked.jobs_tried)
    return _Before(rate, summarize(replay(before(cluster, rate, args.seed), jobs, failures, mapping, log)))


def _before_line(args: argparse.Namespace, brief: _Before, unchecked) -> str:
    if args.before == "whole-node":
        return (
            "- before (whole node per job): the baseline's FIFO lines, each job holding every card of "
            f"the nodes it lands on; {brief.summary.busy_starts} starts failed"
        )
    return (
        f"- before (the brief's): the baseline with {brief.rate:.1%} of starts crashing on a busy card "
        f"the default scheduler cannot see, the share of jobs the replay without the startup check saw "
        f"fail at start ({unchecked.jobs_crashed_at_start} of {unchecked.jobs_tried}); seed {args.seed}; "
        f"{brief.summary.busy_starts} starts failed, {brief.summary.lost_to_busy_devices} jobs lost"
    )


def _without_startup_check(args: argparse.Namespace, cluster, jobs, failures, mapping):
    """The proposed policy's summary with the startup check off on every pool."""
    from ..simulate import declared, replay
    from ..simulate.busy import startup_checks
    from ..simulate.metrics import summarize

    policy = declared(cluster, args.policy, startup_checks(Path(args.repo), cluster, False))
    return summarize(replay(policy, jobs, failures, mapping))


def _scales(text: str) -> tuple[float, float] | None | str:
    from ..simulate.workload import parse_scales

    return parse_scales(text)


def _mixed_trace(args: argparse.Namespace, cluster):
    """The mixed workload as a Trace (a TraceError when its sources are missing or the factors are wrong)."""
    from ..simulate.workload import mixed_trace

    return mixed_trace(cluster, traces_folder(args), args.scale, args.days, args.seed)


def _cluster(args: argparse.Namespace):
    _, cluster, error = fleet_and_cluster(args)
    return cluster, error


def _run_base(args: argparse.Namespace, cluster, trace, jobs, failures, mapping, out: Path) -> int:
    """`--base REV`: the policy at REV and the working tree's, replayed on the same jobs (built once, the
    scale resolved on the head) beside one baseline (simulate/revisions.py, decision 0091). REV is read into
    a temporary tree by gitrev (git plumbing: no checkout, no filters) and loaded as data; nothing in it
    runs."""
    from ..errors import ToolError
    from ..infra import gitrev
    from ..infra.transaction import write_files
    from ..simulate import revisions
    from ..simulate.busy import startup_checks
    from ..simulate.report import kueue_line, kueue_settings
    from ..simulate.verdict import DEFAULT_WORSE_BY

    root = Path(args.repo)
    started = time.perf_counter()
    events: dict[str, list] | None = {} if args.events is not None else None
    head = revisions.Revision(
        revisions.HEAD_LABEL, None, cluster, startup_checks(root, cluster) if args.busy_devices else None
    )
    try:
        commit = gitrev.resolve(root, args.base)
        with gitrev.materialize(root, commit) as base_root:
            base_cluster, error = _base_cluster(base_root, cluster.name, args.base)
            if base_cluster is None:
                return _fail(error)
            checks = startup_checks(base_root, base_cluster) if args.busy_devices else None
            base = revisions.Revision(args.base, commit, base_cluster, checks)  # a model: the tree may go
        loaded = time.perf_counter() - started
        # the brief's before, once, at the head's busy-start rate (as without --base), beside the revisions
        busy_replays = _busy_replays_beside(args, cluster, jobs, failures, mapping, events)
        comparison = revisions.replay_revisions(base, head, jobs, failures, mapping, args.policy, events)
        if busy_replays is not None:
            comparison.before = busy_replays()[1].summary
    except (ValueError, ToolError) as exc:  # a bad REV, a tree git cannot give, a cluster the replay refuses
        return _fail(str(exc))
    seconds = time.perf_counter() - started
    settings = kueue_settings(cluster)
    worse_by = DEFAULT_WORSE_BY if args.worse_by is None else args.worse_by / 100
    worse = revisions.head_worse(comparison, worse_by)
    verdict = revisions.verdict_lines(worse, worse_by)
    workload = _workload_line(args, trace)
    context = [
        f"- cluster: `{cluster.name}`; trace: `{trace.source}` ({trace.format}, {len(jobs)} GPU jobs)",
        f"- base: {base.label}; head: {head.label}; {workload}",
        f"- proposed placement: {args.policy}; failures: `{args.fail_nodes or 'none'}`; "
        f"{seconds:.2f} s: the base read, loaded and removed in {loaded:.2f} s, then the replays",
        kueue_line(settings) + " (the head's)",
    ]
    files = {out / "report.md": revisions.render_markdown(comparison, context, verdict)}
    if events is not None:
        files[args.events] = "".join(
            json.dumps({"policy": policy, **event}, sort_keys=True) + "\n"
            for policy, log in events.items()
            for event in log
        )
    try:
        write_files(files)
    except ToolError as exc:
        return _fail(f"cannot write the report to {out}: {exc}")
    if args.format == "json":
        scale = {"training": trace.scale[0], "inference": trace.scale[1]} if trace.scale else None
        built = {
            "scale": scale,
            "scale_option": args.scale if args.workload else None,
            "seed": args.seed,
            "days": args.days if args.workload else None,
        }
        print(
            json.dumps(
                {
                    "cluster": cluster.name,
                    "trace": trace.source,
                    "jobs": len(jobs),
                    "seconds": seconds,
                    "base_load_seconds": loaded,
                    "workload": built,
                    **revisions.as_json(comparison, worse, worse_by),
                    "kueue": settings,
                    "report": str(out),
                },
                indent=2,
            )
        )
    else:
        print(f"cluster {cluster.name}, trace {trace.source} ({len(jobs)} jobs), {seconds:.2f} s")
        print(f"base {base.label} against head ({head.label}); {workload}\n")
        print(revisions.headline_table(comparison))
        print(f"\nreport: {out / 'report.md'}")
        print("\n".join(verdict))
    return 1 if comparison.head_summary.never_scheduled else 0


def _unknown_revision(args: argparse.Namespace) -> str:
    """Why git cannot give `--base`'s revision, or ""."""
    from ..errors import ToolError
    from ..infra import gitrev

    try:
        gitrev.resolve(Path(args.repo), args.base)
    except ToolError as exc:
        return str(exc)
    return ""


def _base_cluster(base_root: Path, name: str, rev: str):
    """(the cluster `name` as revision `rev` declares it, "") or (None, why not), the temporary tree's path
    replaced by the revision in any message."""
    fleet, error = load_fleet_or_error(argparse.Namespace(repo=base_root, cluster=name))
    if fleet is not None and name not in fleet.clusters:
        error = f"cluster {name!r} does not exist at revision {rev}"
    if error:
        return None, f"--base {rev}: {error.replace(str(base_root), rev)}"
    return fleet.clusters[name], ""


def _workload_line(args: argparse.Namespace, trace) -> str:
    """What both revisions replayed: the scale and seed once (`auto` as the head resolved it)."""
    if trace.scale is None:
        return "the same jobs for both"
    chosen = " (--scale auto, chosen once on the head)" if args.scale == "auto" else ""
    return (
        f"the same jobs for both: --scale {trace.scale[0]:g}:{trace.scale[1]:g}{chosen} "
        f"--seed {args.seed} --days {args.days}"
    )
