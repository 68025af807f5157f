"""gpupolicy diff: what a change does to capacity, quotas, priorities, drivers and access, every rendered
object it
changes, and its findings."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from .. import diff, pipeline
from ..configure import guardrails
from ..infra import gitrev
from ..infra.progress import progress_bar
from . import COMMANDS

NAME = "diff"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base",
        metavar="REV",
        help="base revision (default: the merge base of HEAD with main, or HEAD when there is no main)",
    )
    parser.add_argument("--head", metavar="REV", help="head revision (default: the working tree)")
    parser.add_argument(
        "--format",
        default="markdown",
        choices=tuple(diff.OUTPUTS),
        help="markdown (a PR comment), json, or a findings format "
        "(sarif: every head finding with its baseline state; junit, github: introduced "
        "ones)",
    )
    parser.add_argument("--no-cache", action="store_true", help="render again even when inputs are unchanged")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--verbose", "-v", action="store_true", help="print timings per side")


def _run_side(
    root: Path, label: str, args: argparse.Namespace, guardrail_base: guardrails.FromBase | None = None
) -> pipeline.RunResult:
    with progress_bar(f"rendering {label}") as bar:
        result = pipeline.run(root, use_cache=not args.no_cache, progress=bar, guardrail_base=guardrail_base)
    if args.verbose:
        print(
            f"{label}: {result.stage_times}; {result.cached_renders} of {len(result.rendered_clusters)} "
            "render(s) "
            "from cache",
            file=sys.stderr,
        )
    for crash in result.crashes:
        print(f"gpupolicy: {label}: {crash}", file=sys.stderr)
    return result


def _label(root: Path, rev: str) -> str:
    return f"{rev} ({gitrev.resolve(root, rev)[:12]})"


def run(args: argparse.Namespace) -> int:
    root: Path = args.repo
    if args.base:
        base_rev, base_label = args.base, _label(root, args.base)
    else:
        base_rev, base_label = gitrev.default_base(root)
    with ExitStack() as stack:
        base_root = stack.enter_context(gitrev.materialize(root, base_rev))
        head_root = stack.enter_context(gitrev.materialize(root, args.head)) if args.head else root
        base = _run_side(base_root, "base", args)
        # the head is judged by the base's guardrail configuration; its own takes effect once merged (CFG003)
        head = _run_side(head_root, "head", args, guardrails.FromBase(root, base_rev))
    from ..rules import all_rules

    result = diff.compare(
        base.fleet,
        head.fleet,
        base.findings,
        head.findings,
        base_label,
        _label(root, args.head) if args.head else "working tree",
        all_rules(),
        head.waived,
        head.causes,
    )
    text = diff.OUTPUTS[args.format](result, str(root))
    if args.output:
        Path(args.output).write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    else:
        print(text.rstrip("\n"))
    if base.crashes or head.crashes:
        return 2
    return 1 if result.introduced_errors else 0
