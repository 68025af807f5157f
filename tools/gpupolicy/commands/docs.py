"""gpupolicy docs: regenerate the pages under docs/generated/ from the manifests, or check they are current."""

from __future__ import annotations

import argparse

from .. import docsgen, pipeline

NAME = "docs"
HELP = "generate the fleet pages of the runbook site (docs/generated/); --check fails when one is stale"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")


def run(args: argparse.Namespace) -> int:
    fleet = pipeline.load_fleet(args.repo)
    pages = docsgen.generate(args.repo, fleet)
    if args.check:
        stale = docsgen.stale_pages(args.repo, pages)
        for rel in stale:
            print(f"{rel}: stale (run `gpupolicy docs`)")
        if not stale:
            print(f"{len(pages)} generated pages are current")
        return 1 if stale else 0
    changed = docsgen.write_pages(args.repo, pages)
    print(f"{len(changed)} page(s) written, {len(pages) - len([c for c in changed if c in pages])} unchanged")
    return 0
