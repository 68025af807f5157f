"""gpupolicy schemas import FILE...: turn CRD YAML into JSON Schemas the validator uses for this
repository."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ToolError
from ..infra import repopath
from ..infra.schema import crd
from ..pipeline import IMPORTED_SCHEMAS
from . import COMMANDS

NAME = "schemas"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    what = "convert CRD YAML files into policies/crd-schemas/<group>/<kind>-<version>.json"
    importer = sub.add_parser(
        "import",
        help=what,
        description=f"{what}; validate then checks custom resources of those kinds against them",
    )
    importer.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="CustomResourceDefinition YAML, e.g. the output of `kubectl get crd NAME -o yaml`",
    )
    importer.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="policy repository root")
    importer.add_argument("--out", metavar="DIR", help=f"output folder (default: <repo>/{IMPORTED_SCHEMAS})")


def run(args: argparse.Namespace) -> int:
    if args.out:  # the user's own choice of folder
        return crd.main_import([*args.files, "--out", args.out])
    out = args.repo / IMPORTED_SCHEMAS
    if not repopath.within(args.repo, out):  # the repository's folder is content: it may be a symlink out
        raise ToolError(
            f"{IMPORTED_SCHEMAS} resolves outside the repository; pass --out DIR to write elsewhere"
        )
    return crd.main_import([*args.files, "--out", str(out)])
