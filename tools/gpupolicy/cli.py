"""`gpupolicy` command line: each module in gpupolicy.commands with NAME/HELP/add_arguments/run is a
subcommand, listed in `commands.COMMANDS`. Only the command that runs is imported: `gpupolicy --help` imports
none of them (and none of the pipeline), `gpupolicy rules` only what listing the rules needs.

Exit codes everywhere: 0 clean, 1 findings of error severity, 2 the tool could not do its whole job (usage,
a missing dependency, a check that crashed). An unexpected exception is a one-paragraph message and exit 2,
never a traceback (unless GPUPOLICY_DEBUG=1) and never exit 1, which CI reads as a policy failure.
"""

from __future__ import annotations

import argparse
import importlib
import keyword
import sys
import traceback
from pathlib import Path
from types import ModuleType

from . import __version__, commands
from .errors import ToolError
from .infra.reporoot import find_repo_root
from .internal import DEBUG_ENV, debugging, describe

ACTION_DESTINATIONS = ("upgrade_action", "mig_action", "action")  # the subcommands' own subcommands

# What `gpupolicy --help` tells a user (the module docstring above is for developers).
DESCRIPTION = """\
Check a GitOps policy repository for GPU scheduling on Kubernetes before Argo CD or Flux applies it:
render every cluster, validate each manifest, and check that pools, quotas, priorities, drivers and
alerts fit the declared hardware. It also writes the runbook site's fleet pages and answers what-if
questions about capacity and wait times."""

EPILOG = """\
where to start:
  gpupolicy validate         is the repository fine? (what CI runs on every pull request)
  gpupolicy diff             what does my change do to capacity, quotas and access? (the PR comment)
  gpupolicy rules ID         why a finding matters and how to fix it
  gpupolicy COMMAND --help   the options of one command

exit codes (every command):
  0    clean: no finding of error severity
  1    findings of error severity; the report lists each with file and line
  2    the tool could not do its whole job: a usage error, a missing dependency, a check that crashed
  130  interrupted (Ctrl-C)"""


def command_module(name: str) -> ModuleType:
    """The module of the subcommand `name` (a key of `commands.COMMANDS`), imported now."""
    return importlib.import_module(f"{commands.__name__}.{name}{'_' if keyword.iskeyword(name) else ''}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Given the arguments it will parse, it imports only the command they name
    (none for `--help` or a usage error); without them, every command (for tests and the help checks)."""
    parser = argparse.ArgumentParser(
        prog="gpupolicy",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gpupolicy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    wanted = None if argv is None else _named_command(argv)
    for name, help_text in commands.COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if argv is None or name == wanted:
            _add_command(command, command_module(name))
    return parser


def _named_command(argv: list[str]) -> str | None:
    """The command `argv` names: its first word that is not an option (the top level's options take no
    value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _add_command(command: argparse.ArgumentParser, module: ModuleType) -> None:
    command.add_argument(
        "--repo",
        type=Path,
        default=None,
        help="policy repository root (default: the one containing the current directory)",
    )
    module.add_arguments(command)
    command.set_defaults(_module=module)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: 0 for --help, 2 for usage errors
        return int(exit_.code or 0)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    try:
        if getattr(args._module, "NEEDS_REPO", True):
            args.repo = _repo(args.repo)
        elif args.repo is not None:
            args.repo = args.repo.resolve()
        blocked = _recover_first(args)
        if blocked:
            return blocked
        return int(args._module.run(args))
    except ToolError as exc:
        print(f"gpupolicy: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a bug, reported as one
        return _internal_error(_command_name(args), exc)


def _recover_first(args: argparse.Namespace) -> int:
    """A writing command finishes an interrupted edit before its own; any other command reports it and stops
    (exit 2: validating half an edit would judge a tree nobody wrote). Cheap without a journal: one lstat."""
    from .infra import transaction

    repo = getattr(args, "repo", None)
    if repo is None or not transaction.interrupted(repo):
        return 0
    if args.command in commands.WRITING_COMMANDS:
        print(f"gpupolicy: {transaction.recover(repo)}", file=sys.stderr)
        return 0
    print(
        f"gpupolicy: {transaction.JOURNAL_NAME} in {repo}: an edit of several files was interrupted; run "
        "`gpupolicy recover` (or any command that writes) to finish it first",
        file=sys.stderr,
    )
    return 2


def _command_name(args: argparse.Namespace) -> str:
    """`upgrade status`, `schemas import`, `mig check`, or the plain command."""
    action = next((getattr(args, name) for name in ACTION_DESTINATIONS if getattr(args, name, None)), None)
    return f"{args.command} {action}" if action else str(args.command)


def _internal_error(command: str, exc: BaseException) -> int:
    if debugging():
        traceback.print_exception(exc, file=sys.stderr)
    print(
        f"gpupolicy: internal error in {command}: {describe(exc)} (please report; run with {DEBUG_ENV}=1 "
        "for the traceback)",
        file=sys.stderr,
    )
    return 2


def _repo(given: Path | None) -> Path:
    if given is not None:
        if not given.is_dir():
            raise ToolError(f"--repo {given}: not a directory")
        return given.resolve()
    return find_repo_root(Path.cwd())


if __name__ == "__main__":
    sys.exit(main())
