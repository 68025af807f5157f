"""`gpupolicy` command line: each module in gpupolicy.commands with NAME/HELP/add_arguments/run is a subcommand.

Exit codes everywhere: 0 clean, 1 findings of error severity, 2 the tool could not run.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from . import __version__, commands
from .errors import ToolError
from .pipeline import find_repo_root


def _command_modules() -> list:
    modules = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            modules.append(module)
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpupolicy", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"gpupolicy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        command.add_argument("--repo", type=Path, default=None,
                             help="policy repository root (default: the one containing the current directory)")
        module.add_arguments(command)
        command.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
        return int(args._module.run(args))
    except ToolError as exc:
        print(f"gpupolicy: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _repo(given: Path | None) -> Path:
    if given is not None:
        if not given.is_dir():
            raise ToolError(f"--repo {given}: not a directory")
        return given.resolve()
    return find_repo_root(Path.cwd())


if __name__ == "__main__":
    sys.exit(main())
