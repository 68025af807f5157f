"""gpupolicy validate: render, load, schema-check, model and rule-check the repository."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from .. import docsgen, pipeline, report
from ..configure import guardrails
from ..errors import ToolError
from ..infra import repopath
from ..infra.cache.store import CacheStore
from ..infra.progress import progress_bar
from ..internal import crash_finding
from ..model import Fleet
from ..pipeline import incremental, shards
from ..pipeline.render import kustomize
from . import COMMANDS

NAME = "validate"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", action="append", metavar="NAME", help="only this cluster (repeatable)")
    parser.add_argument(
        "--changed-since",
        metavar="REV",
        help="only the clusters whose overlay inputs changed since the git revision REV "
        "(committed, staged, unstaged and untracked changes)",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="only shard K of N: every N-th cluster by name, shard 1 also the fleet-level "
        "checks; combine the shards' --format json reports with `gpupolicy report merge`",
    )
    parser.add_argument("--format", default="text", choices=sorted(report.FORMATTERS), help="output format")
    parser.add_argument("--no-cache", action="store_true", help="render again even when inputs are unchanged")
    parser.add_argument("--verbose", "-v", action="store_true", help="print timings per stage")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument(
        "--base",
        metavar="REV",
        help="read the guardrail configuration (gpupolicy.yaml, exceptions, policies/checks, "
        "CODEOWNERS) from the git revision REV, the change's base: the head's versions "
        "are data, and each change to them is a CFG003 error (the CI gate passes this)",
    )
    parser.add_argument(
        "--show-waived",
        action="store_true",
        help="also list the findings reviewed exceptions accept (text format; json and sarif "
        "always carry them)",
    )


@dataclass
class Scope:
    """What a validate run covers. `clusters` None is every cluster; `nothing` when --changed-since reaches no
    cluster and no loose YAML file (then nothing runs). `graph`: the one --changed-since read to select the
    clusters, which the run takes rather than reading it again."""

    clusters: list[str] | None = None
    graph: kustomize.Graph | None = None
    reader: repopath.Reader | None = None  # the boundary that read `graph`: it keeps what it read
    nothing: bool = False
    shard: shards.Shard | None = None


def _scope(args: argparse.Namespace, store: CacheStore) -> Scope:
    if args.shard:
        return _shard_scope(args)
    if not args.changed_since:
        return Scope(args.cluster)
    reader = repopath.Reader(args.repo)
    selection = incremental.changed_clusters(args.repo, args.changed_since, store, reader)
    chosen = [c for c in selection.clusters if not args.cluster or c in args.cluster]
    print(f"gpupolicy: --changed-since {args.changed_since}: {selection.describe()}", file=sys.stderr)
    if args.verbose:
        for cluster, paths in selection.reasons.items():
            print(f"  {cluster}: {', '.join(paths[:5])}{' ...' if len(paths) > 5 else ''}", file=sys.stderr)
    guarded = sorted(path for path in selection.changed if guardrails.is_guarded(path))
    if guarded:
        # the guardrail configuration decides every cluster's findings (and with --base its change is CFG003)
        print(
            f"gpupolicy: guardrail configuration changed ({', '.join(guarded[:3])}): validating everything",
            file=sys.stderr,
        )
        return Scope(args.cluster, selection.graph, reader)
    if chosen:
        return Scope(chosen, selection.graph, reader)
    if selection.validates_loose_files():
        # no cluster is affected, but changed loose files still need the strict loader: validate as asked
        print("gpupolicy: changed YAML outside every cluster overlay: validating everything", file=sys.stderr)
        return Scope(args.cluster, selection.graph, reader)
    return Scope(nothing=True)


def _shard_scope(args: argparse.Namespace) -> Scope:
    if args.cluster or args.changed_since:
        raise ToolError(
            "--shard splits the whole fleet: it does not combine with --cluster or --changed-since"
        )
    shard = shards.parse_shard(args.shard)
    clusters = shard.clusters(pipeline.cluster_names(args.repo))
    if not clusters:
        print(
            f"gpupolicy: shard {shard} has no cluster (there are fewer than {shard.index}); its report is "
            "empty",
            file=sys.stderr,
        )
    return Scope(clusters, shard=shard)


def run(args: argparse.Namespace) -> int:
    # one per run: selection and validation
    store = CacheStore.for_repository(args.repo, enabled=not args.no_cache)
    scope = _scope(args, store)
    if scope.nothing:
        print("gpupolicy: no cluster depends on the changed paths; nothing to validate", file=sys.stderr)
        return 0
    result = _validate(args, scope, store)
    if scope.shard is not None:  # the JSON report carries it (report.as_json)
        result.shard = shards.shard_block(
            scope.shard, result.rendered_clusters, result.unused_exceptions, result.proposed, root=args.repo
        )
    text = report.FORMATTERS[args.format](result, str(args.repo))
    if args.show_waived and args.format == "text" and result.waived:
        text = report.waived_text(result) + "\n" + text
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    if args.verbose:
        print(f"timings: {result.stage_times}; {result.cached_renders} render(s) from cache", file=sys.stderr)
    return report.exit_code(result)


def _guardrail_base(args: argparse.Namespace) -> guardrails.FromBase | None:
    """The base whose guardrail configuration applies (--base), resolved before anything runs: an unknown
    revision is a clear error, never a run on the head's own configuration."""
    return guardrails.FromBase(args.repo, args.base) if args.base else None


def _validate(args: argparse.Namespace, scope: Scope, store: CacheStore) -> pipeline.RunResult:
    """The run; when it crashes outright, a result holding just that crash as an INTERNAL finding, so the
    report is still written (CI uploads it) and says why it is empty."""
    base = _guardrail_base(args)
    if scope.shard is not None and not scope.clusters:
        return pipeline.RunResult(fleet=Fleet(root=str(args.repo)))
    try:
        with progress_bar("rendering") as bar:
            return pipeline.run(
                args.repo,
                clusters=scope.clusters,
                progress=bar,
                graph=scope.graph,
                store=store,
                reader=scope.reader,
                fleet_level=scope.shard is not None and scope.shard.fleet_level,
                fleet_checks=scope.shard is None or scope.shard.fleet_level,
                guardrail_base=base,
                pages=docsgen.page_drift,
            )
    except ToolError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported as a finding and exit 2, see exit_code
        return pipeline.RunResult(
            fleet=Fleet(root=str(args.repo)),
            findings=[crash_finding("the validate pipeline", exc, subject="the repository")],
        )
