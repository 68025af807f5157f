"""gpupolicy rules [ID]: the registered rules, or one rule's documentation.

The built-in rules, those of installed plugin packages, and the repository's declarative checks
(policies/checks/, when run inside a policy repository or with --repo)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import orgchecks
from ..errors import ToolError
from ..infra.reporoot import find_repo_root
from ..rules import Rule, all_rules
from . import COMMANDS, FORMAT_HELP

NAME = "rules"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
NEEDS_REPO = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", nargs="?", help="a rule ID such as CAP001")
    parser.add_argument("--format", default="text", choices=("text", "json"), help=FORMAT_HELP)


def run(args: argparse.Namespace) -> int:
    rules = {**all_rules(), **_declarative_checks(args.repo)}
    if args.id:
        rule = rules.get(args.id.upper())
        if rule is None:
            raise ToolError(f"no rule {args.id!r}; `gpupolicy rules` lists them")
        print(f"# {rule.id}: {rule.summary}\n\nSeverity: {rule.severity.value} · Category: {rule.category}\n")
        print(rule.doc)
        return 0
    if args.format == "json":
        print(
            json.dumps(
                [
                    {"id": r.id, "severity": r.severity.value, "category": r.category, "summary": r.summary}
                    for r in rules.values()
                ],
                indent=2,
            )
        )
        return 0
    width = max((len(r.id) for r in rules.values()), default=6)
    for rule in rules.values():
        print(f"{rule.id:<{width}}  {rule.severity.value:<7}  {rule.summary}")
    return 0


def _declarative_checks(repo: Path | None) -> dict[str, Rule]:
    """The repository's checks as rules; a check with a problem is left out and the problem goes to stderr
    (`gpupolicy validate` reports it as CFG002)."""
    try:
        root = repo or find_repo_root(Path.cwd())
    except ToolError:  # not inside a policy repository: the installed rules only
        return {}
    checks = orgchecks.read(str(root), set(all_rules()))
    for problem in checks.problems:
        print(f"gpupolicy: {problem.place}: {problem.rule}: {problem.message}", file=sys.stderr)
    return checks.rules
