"""gpupolicy validate: render, load, schema-check, model and rule-check the repository."""

from __future__ import annotations

import argparse
import sys

from .. import pipeline, report
from ..progress import progress_bar

NAME = "validate"
HELP = "validate the whole repository (render, strict load, schemas, fleet rules)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", action="append", metavar="NAME", help="only this cluster (repeatable)")
    parser.add_argument("--format", default="text", choices=sorted(report.FORMATTERS), help="output format")
    parser.add_argument("--no-cache", action="store_true", help="render again even when inputs are unchanged")
    parser.add_argument("--verbose", "-v", action="store_true", help="print timings per stage")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    with progress_bar("rendering") as bar:
        result = pipeline.run(args.repo, clusters=args.cluster, use_cache=not args.no_cache, progress=bar)
    text = report.FORMATTERS[args.format](result, str(args.repo))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    if args.verbose:
        stages = ", ".join(f"{stage} {seconds:.3f}s" for stage, seconds in result.timings.items())
        print(f"timings: {stages}; {result.cached_renders} render(s) from cache", file=sys.stderr)
    for crash in result.crashes:
        print(f"gpupolicy: {crash}", file=sys.stderr)
    if result.crashes:
        return 2
    return 1 if result.errors else 0
