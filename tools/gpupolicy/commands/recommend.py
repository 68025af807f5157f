"""`gpupolicy recommend`: search a cluster's queue policy with the simulator and propose the best one.

Knobs searched: nominal quota, borrowing and lending limits of each non-production ClusterQueue per GPU
flavor, which cohort it joins, each time-sliced pool's replicas, where 1 switches an inference pool to
exclusive cards and 2 or more an exclusive inference pool to time-slicing (recommend/sharing.py), and each
mixed-strategy MIG pool's layout among those the MIG solver accepts for its GPU (recommend/layouts.py), and a
queue's borrowing limit on another class's exclusive pool it does not list yet (recommend/lending.py).
Candidates come from Optuna's seeded TPE sampler in fixed batches, every second one a hill-climbing step from
the best candidate so far (recommend/neighbours.py), and are replayed (TPE's first on half the workload, for
the pruner) in a local process pool (--jobs) or on Ray (--ray ADDRESS); the numbers never depend
on the executor. Candidates are ranked by one lexicographic objective (recommend/objective.py); the best
candidate strictly better than the repository's policy that, written into a temporary copy of the repository,
leaves no error finding is the recommendation, else the repository's policy ("keep the repository's policy");
--apply writes it into the repository's files (refused for files with uncommitted changes unless --force).
Output: ranked candidates, the before/after table (baseline, repository policy, recommended) and the Pareto
front as --out DIR/pareto.png (default artifacts/recommend/ in the repository, git-ignored); with
--other-seeds, an answer only where it holds on those weeks of the mixed workload too (recommend/weeks.py);
with --search-seeds, every candidate replayed whole on those weeks too, ranked over all of them and offered
only where it holds on each.
Exit codes: 0 a clean recommendation was found, 1 none of the candidates checked was clean, 2 could not run.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from ..infra import repopath
from . import COMMANDS, FORMAT_HELP

NAME = "recommend"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
DEFAULT_OUT = "artifacts/recommend"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..simulate.placement import DEFAULT_PLACEMENT, PLACEMENTS

    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--cluster", metavar="NAME", required=True, help="cluster whose policy is searched")
    parser.add_argument(
        "--workload", choices=("mixed",), help="the mixed ITP + openb workload (as simulate builds)"
    )
    parser.add_argument("--trace", metavar="FILE", type=Path, help="a trace file instead of --workload")
    parser.add_argument("--trace-format", choices=("csv", "openb", "itp"), help="detected when omitted")
    parser.add_argument(
        "--traces", metavar="DIR", type=Path, help="--workload mixed: where ITP and openb are"
    )
    parser.add_argument(
        "--scale", metavar="T:I", default="auto", help="--workload mixed: arrival-rate factors"
    )
    parser.add_argument("--days", type=int, default=7, metavar="N", help="--workload mixed: days replayed")
    parser.add_argument("--limit", type=int, metavar="N", help="replay only the first N jobs")
    parser.add_argument(
        "--workload-seed",
        type=int,
        default=0,
        metavar="N",
        help="--workload mixed: the workload's seed, as `simulate --seed` (default 0)",
    )
    parser.add_argument(
        "--other-seeds",
        default="",
        metavar="N,M",
        help="--workload mixed: offer only an answer that also holds on these seeds' weeks (no worse than "
        "the repository's policy on any headline figure there), walking down --check candidates",
    )
    parser.add_argument(
        "--search-seeds",
        default="",
        metavar="N,M",
        help="--workload mixed: search on these seeds' weeks too: each candidate replayed whole on every "
        "week, ranked over all of them, offered only where it holds on each (costs a replay per week)",
    )
    parser.add_argument(
        "--busy-devices",
        action="store_true",
        help="replay candidates as `simulate --busy-devices` replays the repository's policy",
    )
    parser.add_argument(
        "--target",
        default="",
        metavar="SPEC",
        help="wait targets, e.g. 'serving:p95<15m,training:p50<2h' (KEY: queue, tier or workload)",
    )
    parser.add_argument(
        "--policy",
        choices=sorted(PLACEMENTS),
        default=DEFAULT_PLACEMENT,
        help=f"placement score the candidates replay with (default {DEFAULT_PLACEMENT})",
    )
    parser.add_argument(
        "--trials", type=int, default=64, metavar="N", help="candidates to evaluate (default 64)"
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=8,
        metavar="N",
        help="candidates sampled per batch (default 8); part of what the seed reproduces",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampler seed, 0 to 2**32 - 1 (default 0)")
    parser.add_argument("--jobs", type=int, default=2, metavar="K", help="local worker processes (default 2)")
    parser.add_argument(
        "--ray", metavar="ADDRESS", help="run the replays on Ray (auto, ray://head:10001, local)"
    )
    parser.add_argument(
        "--check",
        type=int,
        default=5,
        metavar="N",
        help="walk down at most N ranked candidates for one that every rule accepts (default 5)",
    )
    parser.add_argument(
        "--out", metavar="DIR", type=Path, help=f"where pareto.png goes (default {DEFAULT_OUT})"
    )
    parser.add_argument("--apply", action="store_true", help="write the recommendation into the repository")
    parser.add_argument(
        "--force",
        action="store_true",
        help="--apply: overwrite files that have uncommitted changes (refused without it)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="keep the result as docs/recommendations/<cluster>.json and .png for `gpupolicy docs`",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)


# Optuna's TPESampler seeds numpy's RandomState, which takes seeds from 0 to 2**32 - 1
SAMPLER_SEEDS = 2**32


def _fail(message: str) -> int:
    print(f"gpupolicy recommend: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ..errors import ToolError

    if (
        not 1 <= args.trials <= 10_000
        or not 1 <= args.batch <= 1_000
        or not 1 <= args.jobs <= 256
        or not 1 <= args.check <= 100
    ):
        return _fail("--trials 1..10000, --batch 1..1000, --jobs 1..256 and --check 1..100")
    if args.workload_seed < 0:
        return _fail("--workload-seed takes a number of 0 or more")
    if not 0 <= args.seed < SAMPLER_SEEDS:
        return _fail(f"--seed takes a number from 0 to {SAMPLER_SEEDS - 1}")
    if args.limit is not None and args.limit < 1:
        return _fail("--limit takes a positive number of jobs")
    if args.workload and args.trace is not None:
        return _fail("pass either --workload or --trace")
    if not args.workload and args.trace is None:
        return _fail("name the workload: --workload mixed or --trace FILE")
    from ..recommend.weeks import MOST, parse_seeds

    for option in ("other_seeds", "search_seeds"):
        flag = "--" + option.replace("_", "-")
        setattr(args, option, parse_seeds(getattr(args, option)))
        if getattr(args, option) is None:
            return _fail(f"{flag} takes up to {MOST} comma-separated numbers of 0 or more, e.g. 1,2")
        if getattr(args, option) and not args.workload:
            return _fail(f"{flag} replays other weeks of --workload mixed; a --trace file has one")
        if args.workload_seed in getattr(args, option):
            return _fail(f"{flag} names --workload-seed's own week ({args.workload_seed})")
    if both := sorted(set(args.other_seeds) & set(args.search_seeds)):
        return _fail(f"seed {both[0]} is in both --search-seeds and --other-seeds: a searched week holds")
    out, error = repopath.output_folder(args.repo, args.out, DEFAULT_OUT)
    if out is None:
        return _fail(error)
    try:
        return _recommend(args, out)
    except ToolError as exc:
        return _fail(str(exc))


def _recommend(args: argparse.Namespace, out: Path) -> int:
    from ..infra.transaction import write_files
    from ..recommend import edits, executors, plot, record, space, targets
    from ..recommend.search import search, simplify
    from ..recommend.weeks import Week
    from ..simulate.policy import baseline, from_cluster
    from ..simulate.report import kueue_settings
    from ._fleet import fleet_and_cluster

    # the whole fleet: the examples under docs/examples/ say which MIG profiles a layout must keep
    fleet, cluster, error = fleet_and_cluster(args, every_cluster=True)
    if cluster is None:
        return _fail(error)
    wanted = targets.parse(args.target)
    sources = _sources(args) if args.search_seeds or args.other_seeds else None
    jobs = _jobs(args, cluster, sources)
    targets.check_known(wanted, from_cluster(cluster), cluster.name)
    knob_list = space.knobs(cluster, fleet)
    if not knob_list:
        return _fail(
            f"cluster {cluster.name} has no non-production ClusterQueue in a cohort: nothing to search"
        )
    # every week's jobs before any executor: a week that cannot be built leaves no workers behind
    searched = [_week_jobs(args, cluster, seed, sources) for seed in args.search_seeds]
    started = time.perf_counter()
    runner = executors.executor(jobs, args.jobs, args.ray)
    replays = _with_busy_devices(args, cluster, runner) if args.busy_devices else runner
    if searched:
        weeks_replays = [_replays_over(args, cluster, week, args.ray) for week in searched]
        replays = executors.Weeks(replays, weeks_replays, args.search_seeds)
    try:
        candidates = search(
            cluster, knob_list, wanted, args.trials, args.seed, args.batch, replays, args.policy
        )
        seconds = time.perf_counter() - started
        base_replay = runner.start([(baseline(cluster), 1.0)])  # beside the simplification's replays
        smaller = functools.partial(simplify, cluster, knob_list, wanted, run=replays, placement=args.policy)
        weeks = _OtherWeeks(args, cluster, knob_list, sources)
        try:
            chosen, rejected = _first_clean(
                Path(args.repo), cluster.name, knob_list, candidates, args.check, smaller, weeks
            )
        finally:
            weeks.close()
        base = executors.summary_of(base_replay()[0])
    finally:
        replays.close()
    repo_policy = next(c for c in candidates if c.number == 0)
    if chosen and searched and space.changes(knob_list, chosen[0].params):
        counts = [len(week) for week in searched]
        mine = zip(args.search_seeds, counts, repo_policy.others, chosen[0].others, strict=True)
        chosen = (chosen[0], chosen[1], [Week(*week) for week in mine] + chosen[2])
    png = plot.pareto_png(candidates, chosen[0] if chosen else None)
    write_files({out / "pareto.png": png})
    summaries = [base, repo_policy.summary] + ([chosen[0].summary] if chosen else [])
    waits = targets.target_report(
        wanted, {"repository": repo_policy.waits} | ({"recommended": chosen[0].waits} if chosen else {})
    )
    if args.record:
        changes = _changes(knob_list, chosen[0]) if chosen else []
        text = record.record_text(
            cluster.name,
            _rebuild_command(args),
            summaries,
            changes,
            sorted(chosen[1]) if chosen else [],
            _points(candidates),
            len(candidates),
            waits,
        )
        record.write_record(Path(args.repo), cluster.name, text, png)
    refusal = _apply_refusal(args, chosen[1]) if chosen and args.apply else None
    if chosen and args.apply and refusal is None:
        edits.apply_to_repository(Path(args.repo), chosen[1])
        from .. import docsgen

        docsgen.refresh(Path(args.repo))  # the quota tables and cluster pages follow the applied change
    report = dict(
        cluster=cluster.name,
        jobs=len(jobs),
        searched=args.search_seeds,
        trials=len(candidates),
        seconds=seconds,
        executor=runner.name,
        candidates=candidates,
        chosen=chosen,
        rejected=rejected,
        summaries=summaries,
        knobs=knob_list,
        out=out,
        targets=waits,
        applied=bool(chosen and args.apply and refusal is None),
        kueue=kueue_settings(cluster),
        weeks=chosen[2] if chosen else [],
    )
    (_print_json if args.format == "json" else _print_text)(report)
    if refusal:
        return _fail(refusal)
    return 0 if chosen else 1


class _OtherWeeks:
    """`--other-seeds`'s weeks (recommend/weeks.py), on which `_first_clean` judges each answer it checks:
    each week's jobs, a local pool over them and the repository's policy's replay there are worked out once,
    as the search replayed its own week (busy devices, placement), from the traces read once. An answer that
    changes nothing is not replayed."""

    def __init__(self, args: argparse.Namespace, cluster, knob_list, sources: tuple | None = None) -> None:
        from ..recommend import space

        self.args, self.cluster, self.knob_list = args, cluster, knob_list
        self.repository = space.candidate_policy(cluster, knob_list, {}, args.policy)
        self.opened: dict[int, tuple[int, object, object]] = {}  # seed -> (jobs, replays, repository's)
        self.runners: list = []
        self.sources = sources  # (ITP, openb) jobs; else read for the first week replayed

    def judge(self, params: dict) -> list:
        from ..recommend import space

        if not self.args.other_seeds or not space.changes(self.knob_list, params):
            return []
        policy = space.candidate_policy(self.cluster, self.knob_list, params, self.args.policy)
        return [self._week(seed, policy) for seed in self.args.other_seeds]

    def _week(self, seed: int, policy):
        from ..recommend import executors
        from ..recommend.weeks import Week

        if seed in self.opened:
            count, replays, repository = self.opened[seed]
            return Week(seed, count, repository, replays.map([(policy, 1.0)])[0])
        if self.sources is None:
            self.sources = _sources(self.args)
        jobs = _week_jobs(self.args, self.cluster, seed, self.sources)
        replays = _replays_over(self.args, self.cluster, jobs)
        self.runners.append(replays)
        repository, recommended = replays.map([(self.repository, 1.0), (policy, 1.0)])
        repository = executors.summary_of(repository)
        self.opened[seed] = (len(jobs), replays, repository)
        return Week(seed, len(jobs), repository, recommended)

    def close(self) -> None:
        for runner in self.runners:
            runner.close()


def _sources(args: argparse.Namespace) -> tuple:
    """The mixed workload's traces, read once for every week replayed (mixed.read_sources)."""
    from ..errors import ToolError
    from ..simulate import mixed
    from ..simulate.traces import TraceError
    from ._fleet import traces_folder

    try:
        return mixed.read_sources(traces_folder(args))
    except TraceError as exc:
        raise ToolError(str(exc)) from None


def _week_jobs(args: argparse.Namespace, cluster, seed: int, sources: tuple):
    """Seed `seed`'s week of the mixed workload, built as the search's own week is."""
    return _jobs(argparse.Namespace(**{**vars(args), "workload_seed": seed}), cluster, sources)


def _replays_over(args: argparse.Namespace, cluster, jobs, ray: str | None = None):
    """An executor over `jobs` that replays a candidate as the search replays its own week (busy devices);
    closing it closes its workers."""
    from ..recommend import executors

    runner = executors.executor(jobs, args.jobs, ray)
    return _with_busy_devices(args, cluster, runner) if args.busy_devices else runner


def _with_busy_devices(args: argparse.Namespace, cluster, runner):
    """`runner` with each candidate's time-sliced pods taking one replica each and meeting busy devices where
    pool.yaml turns the startup check off, as `simulate --busy-devices` replays the repository's policy."""
    from ..recommend.executors import Prepared
    from ..simulate.busy import startup_checks, with_busy_devices

    checks = startup_checks(Path(args.repo), cluster)
    return Prepared(runner, lambda policy: with_busy_devices(policy, checks))


def _apply_refusal(args: argparse.Namespace, texts) -> str | None:
    """Why --apply must not write these files (some have uncommitted changes, which it would overwrite), or
    None;
    --force writes them anyway."""
    from ..infra import gitrev

    if args.force or not texts:
        return None
    reason = gitrev.dirty_reason(Path(args.repo), sorted(texts))
    return f"--apply wrote nothing: {reason}, or pass --force to overwrite them" if reason else None


def _jobs(args: argparse.Namespace, cluster, sources: tuple | None = None):
    """The workload's jobs, sorted by submission; `sources` as `mixed_trace` takes them."""
    from ..errors import ToolError
    from ..simulate.checkpoints import parse_intervals, with_checkpoints
    from ..simulate.traces import TraceError, read_trace
    from ..simulate.workload import mixed_trace, parse_scales
    from ._fleet import traces_folder

    if args.workload and (args.days <= 0 or parse_scales(args.scale) is None):
        raise ToolError("--days takes a positive number and --scale auto or TRAINING:INFERENCE factors")
    try:
        trace = (
            mixed_trace(cluster, traces_folder(args), args.scale, args.days, args.workload_seed, sources)
            if args.workload
            else read_trace(args.trace, args.trace_format)
        )
    except TraceError as exc:
        raise ToolError(str(exc)) from None
    # partial replays take a prefix, so by submission; a stable sort keeps the trace's order among jobs
    # submitted at once, which the engine follows (ties in the trace order, as `simulate` replays them); every
    # job checkpoints at the intervals `simulate` gives it by default
    jobs = with_checkpoints(sorted(trace.jobs, key=lambda job: job.submit), parse_intervals(""))
    jobs = jobs[: args.limit] if args.limit else jobs
    if not jobs:
        raise ToolError(f"{trace.source}: no GPU jobs in the workload")
    return jobs


def _first_clean(root: Path, cluster: str, knob_list, candidates, limit: int, simplified, weeks):
    """The first candidate worth checking (search.worth_checking: at most `limit` that improve on the
    repository's policy, then the repository's policy itself) whose files add no error finding to the
    repository's own and that holds on every week of `weeks` (`_OtherWeeks.judge`, `--other-seeds`):
    (candidate, files, its weeks), and the candidates passed over with why (their first error findings, or
    the weeks where they do not hold). Each is first `simplified` (search.simplify: changes that do not help
    are taken back)."""
    from ..recommend.edits import edited_files, repository_errors
    from ..recommend.search import improves_on, never_worse, worth_checking
    from ..recommend.weeks import misses

    known = repository_errors(root)
    rejected = []
    offered = worth_checking(candidates, limit)
    repository = offered[-1]
    for ranked_candidate in offered:
        smaller = simplified(
            ranked_candidate
        )  # taking changes back may cost a headline figure: then keep them
        candidate = smaller if improves_on(smaller, repository) else never_worse(ranked_candidate, repository)
        texts, errors = edited_files(root, cluster, knob_list, candidate.params, known)
        if errors:
            rejected.append((candidate.number, errors[:3]))
            continue
        judged = weeks.judge(candidate.params)
        if any(not week.holds for week in judged):
            rejected.append((candidate.number, [misses(judged)]))
            continue
        return (candidate, texts, judged), rejected
    return None, rejected


def _changes(knob_list, candidate) -> list[str]:
    from ..recommend.space import changes

    return [f"{knob.name}: {knob.current} -> {value}" for knob, value in changes(knob_list, candidate.params)]


def _points(candidates) -> list[dict]:
    """Each whole replay's place in the plot, for the record."""
    from ..recommend.search import pareto_front

    front = {c.number for c in pareto_front(candidates)}
    return [
        {
            "trial": c.number,
            "useful": c.summary.useful,
            "worst_wait_minutes": c.worst_wait,
            "front": c.number in front,
        }
        for c in sorted(candidates, key=lambda c: c.number)
        if c.summary
    ]


def _rebuild_command(args: argparse.Namespace) -> str:
    """The command line that rebuilds this recommendation (the repository's own paths, never this
    machine's)."""
    from ..simulate.placement import DEFAULT_PLACEMENT

    parts = ["gpupolicy recommend", f"--cluster {args.cluster}"]
    parts.append("--workload mixed" if args.workload else f"--trace {args.trace.name}")
    if args.workload and (args.scale != "auto" or args.days != 7):
        parts.append(f"--scale {args.scale} --days {args.days}")
    if args.workload and args.workload_seed:
        parts.append(f"--workload-seed {args.workload_seed}")
    for option, seeds in (("--search-seeds", args.search_seeds), ("--other-seeds", args.other_seeds)):
        if args.workload and seeds:
            parts.append(f"{option} {','.join(map(str, seeds))}")
    if args.busy_devices:
        parts.append("--busy-devices")
    if args.limit:
        parts.append(f"--limit {args.limit}")
    if args.target:
        parts.append(f"--target '{args.target}'")
    if args.policy != DEFAULT_PLACEMENT:
        parts.append(f"--policy {args.policy}")
    parts.append(
        f"--trials {args.trials} --batch {args.batch} --seed {args.seed} --check {args.check} --record"
    )
    return " ".join(parts)


TARGET_HEADERS = {"repository": "repository policy", "recommended": "recommended"}


def _print_text(report: dict) -> None:
    from ..recommend.targets import target_rows
    from ..simulate.report import kueue_line, markdown_table, summary_rows

    seeds = ", ".join(map(str, report["searched"]))
    plural = "s" * (len(report["searched"]) > 1)
    weeks = f" (and the week{plural} of seed{plural} {seeds})" if seeds else ""
    print(
        f"cluster {report['cluster']}: {report['trials']} candidates on {report['jobs']} jobs{weeks} in "
        f"{report['seconds']:.1f} s ({report['executor']})"
    )
    print(kueue_line(report["kueue"]) + "\n")
    rows = []
    for rank, c in enumerate(report["candidates"], 1):
        if c.summary is None:
            rows.append((rank, c.number, "stopped" if c.stopped else "pruned", "", "", "", ""))
            continue
        waits = ", ".join(f"{k} {v:.0f}m" for k, v in c.waits.items())
        rows.append(
            (
                rank,
                c.number,
                "yes" if c.meets_targets else "no",
                f"{100 * c.summary.useful:.1f}%",
                c.summary.never_scheduled,
                f"{c.worst_wait:.0f}m",
                waits,
            )
        )
    print(
        markdown_table(
            ("rank", "trial", "meets targets", "useful", "never placed", "worst wait", "waits"), rows[:20]
        )
    )
    chosen = report["chosen"]
    header = ("metric", "baseline", "repository policy") + (("recommended",) if chosen else ())
    print("\n" + markdown_table(header, summary_rows(report["summaries"])))
    if report["targets"]:
        policies = ["repository", "recommended"] if chosen else ["repository"]
        print(
            "\nworst wait of each target's queues:\n"
            + markdown_table(
                ("target", "bound", *(TARGET_HEADERS[p] for p in policies)),
                target_rows(report["targets"], policies),
            )
        )
    for c in report["candidates"]:
        if c.stopped:
            print(f"\ncandidate {c.number}'s replay stopped: {c.stopped}")
    for number, errors in report["rejected"]:
        print(f"\ncandidate {number} passed over: " + "; ".join(errors))
    if chosen:
        lines = _changes(report["knobs"], chosen[0]) or [
            "(none: keep the repository's policy; no candidate was strictly better on the objective)"
        ]
        print(
            f"\nrecommended: trial {chosen[0].number} ({chosen[0].reverted} change(s) that did not help "
            "taken "
            "back)\n  " + "\n  ".join(lines)
        )
        print(
            "files: "
            + (", ".join(sorted(chosen[1])) or "none")
            + (" (written)" if report["applied"] else " (not written; --apply writes them)")
        )
    else:
        print("\nno candidate checked was clean under every rule; nothing to recommend")
    if report["weeks"]:
        from ..recommend.weeks import HEADERS, rows

        print(
            "\non other weeks (--search-seeds, --other-seeds), the repository's policy -> the recommended:\n"
            + markdown_table(HEADERS, rows(report["weeks"]))
        )
    print(f"Pareto front: {report['out'] / 'pareto.png'}")


def _print_json(report: dict) -> None:
    def candidate(c):
        return {
            "trial": c.number,
            "pruned": c.pruned,
            "stopped": c.stopped or None,
            "params": c.params,
            "meets_targets": c.meets_targets,
            "score": c.score,
            "objective": list(c.objective),
            "waits": c.waits,
            "summary": asdict(c.summary) if c.summary else None,
        }

    chosen = report["chosen"]
    print(
        json.dumps(
            {
                "cluster": report["cluster"],
                "jobs": report["jobs"],
                "search_seeds": list(report["searched"]),
                "seconds": report["seconds"],
                "executor": report["executor"],
                "kueue": report["kueue"],
                "candidates": [candidate(c) for c in report["candidates"]],
                "baseline": asdict(report["summaries"][0]),
                "repository": asdict(report["summaries"][1]),
                "recommended": candidate(chosen[0]) if chosen else None,
                "changes": _changes(report["knobs"], chosen[0]) if chosen else [],
                "files": sorted(chosen[1]) if chosen else [],
                "applied": report["applied"],
                "passed_over": [{"trial": n, "errors": e} for n, e in report["rejected"]],
                "targets": report["targets"],
                "other_seeds": [
                    {
                        "seed": week.seed,
                        "searched": week.seed in report["searched"],
                        "jobs": week.jobs,
                        "holds": week.holds,
                        "improves": week.improves,
                        "repository": asdict(week.repository),
                        "recommended": asdict(week.recommended),
                    }
                    for week in report["weeks"]
                ],
                "pareto": str(report["out"] / "pareto.png"),
            },
            indent=2,
        )
    )
