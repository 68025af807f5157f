"""gpupolicy render: the rendered manifests of each cluster, as Argo CD / Flux would apply them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ToolError
from ..infra.cache.store import CacheStore
from ..infra.transaction import write_files
from ..pipeline.render import kustomize
from ..pipeline.sources import cluster_names
from . import COMMANDS

NAME = "render"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", action="append", metavar="NAME", help="only this cluster (repeatable)")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="write <DIR>/<cluster>.yaml instead of stdout"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="run kubectl for every overlay; neither read nor write the render cache",
    )


def run(args: argparse.Namespace) -> int:
    names = cluster_names(args.repo)
    selected = args.cluster or names
    unknown = sorted(set(selected) - set(names))
    if unknown:
        raise ToolError(f"no such cluster: {', '.join(unknown)}")
    graph = kustomize.build_graph(args.repo, [f"clusters/{n}" for n in names])
    for finding in graph.findings:
        print(f"{finding.place}: error {finding.rule}: {finding.message}", file=sys.stderr)
    if graph.findings:
        return 1
    store = CacheStore.for_repository(args.repo, enabled=not args.no_cache)
    rendered = kustomize.render(args.repo, [f"clusters/{n}" for n in selected], graph, store)
    status = 0
    written: dict[Path, str] = {}
    for name in selected:
        output = rendered[f"clusters/{name}"]
        if output.error:
            print(f"clusters/{name}: kubectl kustomize failed: {output.error}", file=sys.stderr)
            status = 1
        elif args.out:
            written[args.out / f"{name}.yaml"] = output.text
        else:
            print(f"# cluster: {name}\n---\n{output.text}", end="")
    if written:
        _make_folder(args.out)
        write_files(written)  # whole files or none; never into a FIFO or device (a ToolError says why)
    return status


def _make_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ToolError(f"--out {out}: is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ToolError(f"--out {out}: cannot make the folder: {exc.strerror or exc}") from None
