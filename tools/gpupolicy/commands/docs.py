"""gpupolicy docs: regenerate the pages under docs/generated/ and the queue files' header blocks (decision
0090) from the manifests, or check they are current."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import docsgen, pipeline
from ..audit import load_snapshot
from ..domain import queue_header
from ..errors import ToolError
from ..infra import repopath, transaction
from . import COMMANDS

NAME = "docs"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")
    parser.add_argument(
        "--snapshot",
        action="append",
        metavar="CLUSTER=DIR",
        default=[],
        help="an audit snapshot of CLUSTER (the folder `gpupolicy audit` reads): its page "
        "gains a 'free now' column; needs --out (repeatable)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        help="with --snapshot: write the pages here, not into docs/generated/ (whose "
        "committed pages depend on the repository alone)",
    )


def run(args: argparse.Namespace) -> int:
    if args.snapshot:
        return _write_live(args)
    fleet = pipeline.load_fleet(args.repo)
    pages = docsgen.generate(args.repo, fleet)
    headers = queue_header.refreshed_files(fleet)  # the queue files' count comments (DOC006, decision 0090)
    if args.check:
        stale = docsgen.stale_pages(args.repo, pages)
        for rel in stale:
            print(f"{rel}: stale (run `gpupolicy docs`)")
        for rel in headers:
            print(f"{rel}: queue header stale (run `gpupolicy docs`)")
        if not stale and not headers:
            print(f"{len(pages)} generated pages are current, and the queue headers")
        return 1 if stale or headers else 0
    changed = docsgen.write_pages(args.repo, pages, also=headers)
    print(
        f"{len(changed)} page(s) written, {len(pages) - len([c for c in changed if c in pages])} unchanged"
        + (f"; queue header(s) rewritten in {', '.join(headers)}" if headers else "")
    )
    return 0


def _write_live(args: argparse.Namespace) -> int:
    """The pages with what is free now on each snapshotted cluster, written to --out (never
    docs/generated)."""
    if args.check or args.out is None:
        raise ToolError("--snapshot writes live pages to --out DIR (and cannot be combined with --check)")
    if repopath.within(args.repo, args.out) and not repopath.within(args.repo / "artifacts", args.out):
        raise ToolError(
            f"--out {args.out}: inside the repository, live pages go only under artifacts/ "
            "(ignored "
            "by git); the committed pages depend on the repository alone"
        )
    fleet = pipeline.load_fleet(args.repo)
    snapshots = {}
    for given in args.snapshot:
        cluster, _, folder = given.partition("=")
        if cluster not in fleet.clusters or not folder:
            raise ToolError(
                f"--snapshot {given!r}: expected CLUSTER=DIR with one of {', '.join(fleet.clusters)}"
            )
        snapshots[cluster] = load_snapshot(Path(folder))
    pages = docsgen.generate(args.repo, fleet, snapshots)
    prefix = docsgen.GENERATED_DIR + "/"
    transaction.write_files(
        {
            repopath.output_path(args.out, *rel.removeprefix(prefix).split("/")): text
            for rel, text in pages.items()
        }
    )
    print(f"{len(pages)} page(s) written to {args.out}; 'free now' on {', '.join(sorted(snapshots))}")
    return 0
