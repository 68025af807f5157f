"""gpupolicy report merge: one report from the JSON reports of `validate --shard K/N`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import report
from ..pipeline import shards
from . import COMMANDS

NAME = "report"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser(
        "merge",
        help="merge the JSON reports of every shard of one split",
        description="Merge the JSON reports of every shard of one `validate --shard "
        "K/N` split: the findings, the waived findings and the summary of one run "
        "over every cluster; exit code as validate's.",
    )
    merge.add_argument("reports", nargs="+", type=Path, metavar="FILE", help="a shard's JSON report")
    merge.add_argument("--format", default="text", choices=sorted(report.FORMATTERS), help="output format")
    merge.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    result = shards.merge(args.reports, str(args.repo))
    text = report.FORMATTERS[args.format](result, str(args.repo))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    return report.exit_code(result)
