"""gpupolicy explain: the path a workload manifest takes through each cluster — "why is my pod pending?"
answered offline, step by step, with the file:line of the object that decides each step.

Exit codes: 0 every workload lands where the policy intends on every cluster traced, 1 one does not (blocked,
or CPU-only pods that can run on GPU nodes), 2 the file could not be read or holds no workload.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import COMMANDS, FORMAT_HELP

NAME = "explain"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        metavar="FILE",
        help="a YAML file with one or more workloads (Pod, Job, "
        "Deployment, StatefulSet, JobSet, PyTorchJob, RayJob, LeaderWorkerSet, ...)",
    )
    parser.add_argument("--cluster", metavar="NAME", help="only this cluster (default: every cluster)")
    parser.add_argument(
        "--namespace", metavar="NS", help="trace it in this namespace (default: its own, else default)"
    )
    parser.add_argument("--format", default="text", choices=("text", "json"), help=FORMAT_HELP)
    parser.add_argument(
        "--full",
        metavar="FLAVOR,...",
        default="",
        help="trace as if these ResourceFlavors had no room left (the cluster under load): "
        "Kueue then tries each pod set's next flavor",
    )


def run(args: argparse.Namespace) -> int:
    from .. import workpath
    from ..errors import ToolError
    from ..pipeline import load_fleet

    documents, error = _workloads(Path(args.file), Path(args.repo))
    if error:
        print(f"gpupolicy explain: {error}", file=sys.stderr)
        return 2
    try:
        fleet = load_fleet(args.repo, [args.cluster] if args.cluster else None)
    except ToolError as exc:
        print(f"gpupolicy explain: {exc}", file=sys.stderr)
        return 2
    full = frozenset(f.strip() for f in args.full.split(",") if f.strip())
    unknown = sorted(full - {f for cluster in fleet.clusters.values() for f in cluster.flavors})
    if unknown:
        print(
            f"gpupolicy explain: --full: no ResourceFlavor named {', '.join(unknown)} in the fleet",
            file=sys.stderr,
        )
        return 2
    paths = [
        workpath.trace(fleet, cluster, doc.data, workpath.example_locator(doc), args.namespace, full)
        for doc in documents
        for cluster in fleet.clusters.values()
    ]
    if args.format == "json":
        print(json.dumps([_as_json(p) for p in paths], indent=2))
    else:
        print("\n\n".join(_as_text(p) for p in paths))
    return 1 if any(workpath.misplaced(p)[0] for p in paths) else 0


def _workloads(path: Path, repo: Path) -> tuple[list, str]:
    from ..domain.workloads import WORKLOAD_KINDS
    from ..errors import ToolError
    from ..infra import yamlload
    from ..infra.inputs import read_given

    shown = _shown(path, repo)
    try:
        raw = read_given(path, yamlload.MAX_FILE_BYTES)
    except ToolError as exc:
        return [], f"{shown}: {str(exc).removeprefix(str(path) + ': ')}"
    loaded = yamlload.parse_source(raw, shown)
    if not loaded.ok:
        return [], "; ".join(f"{f.place}: {f.message} [{f.rule}]" for f in loaded.findings)
    found = [d for d in loaded.documents if isinstance(d.data, dict) and d.data.get("kind") in WORKLOAD_KINDS]
    if not found:
        return [], f"{shown}: no workload in it (kinds traced: {', '.join(WORKLOAD_KINDS)})"
    return found, ""


def _shown(path: Path, repo: Path) -> str:
    """Repository-relative when the file is in the repository, so locations read like the rules' findings."""
    try:
        return str(path.resolve().relative_to(repo.resolve()))
    except ValueError:
        return str(path)


def _as_text(path) -> str:
    from .. import workpath

    problem, where = workpath.misplaced(path)
    waits = any(p.waits_for for p in path.pod_sets)
    verdict = (
        f"DOES NOT LAND: {problem}"
        if problem
        else f"waits for room (Kueue keeps it pending): {path.summary()}"
        if waits
        else f"lands: {path.summary()}"
    )
    lines = [f"{path.ref} on {path.cluster}: {verdict}"]
    lines += [_step(step) for step in path.steps]
    for pod_set in path.pod_sets:
        pods = "1 pod" if pod_set.count == 1 else f"{pod_set.count} pods"
        if pod_set.workloads > 1:
            pods += f" in each of {pod_set.workloads} Kueue workloads, one per replica"
        lines.append(f"  pod set {pod_set.name} ({pods}): {pod_set.landing()}")
        lines += ["  " + _step(step) for step in pod_set.steps]
    if problem and where:
        lines.append(_where_to_change(path, where))
    return "\n".join(lines)


def _where_to_change(path, where) -> str:
    """An admission denial's location is the policy's rule, but it is usually the workload that must change:
    say so, so nobody loosens a policy to get a pod through."""
    if path.blocked and path.blocked.stage == "admission":
        return f"  -> change the workload as the policy's message says (the rule: {where})"
    return f"  -> change: {where}"


def _step(step) -> str:
    mark = "ok     " if step.ok else "BLOCKED"
    where = f"  [{step.where}]" if step.where and step.where.path else ""
    return f"  {mark} {step.stage}: {step.text}{where}"


def _as_json(path) -> dict:
    from .. import workpath

    problem, where = workpath.misplaced(path)
    return {
        "workload": path.ref,
        "cluster": path.cluster,
        "namespace": path.namespace,
        "lands": not problem,
        "problem": problem,
        "change": _where(where),
        "summary": path.summary(),
        "steps": [_step_json(s) for s in path.steps],
        "podSets": [
            {
                "name": p.name,
                "count": p.count,
                "pool": p.pool,
                "waitsFor": list(p.waits_for),
                "requests": {r: str(q) for r, q in p.requests.items()},
                "flavors": p.flavors,
                "steps": [_step_json(s) for s in p.steps],
            }
            for p in path.pod_sets
        ],
    }


def _step_json(step) -> dict:
    return {"stage": step.stage, "ok": step.ok, "text": step.text, "where": _where(step.where)}


def _where(where) -> dict | None:
    return {"path": where.path, "line": where.line} if where and where.path else None
